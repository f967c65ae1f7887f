package sqlite_test

import (
	"testing"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/storetest"
)

func TestSettingReader(t *testing.T) {
	storetest.RunSettingReader(t, func(t *testing.T) store.Store { return openTemp(t) })
}
