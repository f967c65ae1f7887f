package postgres_test

import (
	"testing"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/storetest"
)

func TestSettingReader(t *testing.T) {
	server(t)
	storetest.RunSettingReader(t, func(t *testing.T) store.Store { return openFresh(t) })
}
