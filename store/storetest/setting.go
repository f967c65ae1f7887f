package storetest

import (
	"errors"
	"testing"

	"github.com/a2awebcap/a2awebcap/store"
)

// RunSettingReader checks a store's store.SettingReader against its LoadOrStore: an absent
// setting is ErrNotFound (and reading it stores nothing), a stored one reads back as the first
// value stored. Each store that implements the interface runs it.
func RunSettingReader(t *testing.T, open func(t *testing.T) store.Store) {
	t.Parallel()
	s := open(t)
	r, ok := s.(store.SettingReader)
	if !ok {
		t.Fatalf("%T does not implement store.SettingReader", s)
	}
	ctx := t.Context()
	if v, err := r.LoadSetting(ctx, "absent"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoadSetting(absent) = %q, %v; want ErrNotFound", v, err)
	}
	if got, err := s.LoadOrStore(ctx, "absent", []byte("first")); err != nil || string(got) != "first" {
		t.Fatalf("LoadOrStore after LoadSetting = %q, %v; want the value stored then", got, err)
	}
	if _, err := s.LoadOrStore(ctx, "absent", []byte("second")); err != nil {
		t.Fatal(err)
	}
	if v, err := r.LoadSetting(ctx, "absent"); err != nil || string(v) != "first" {
		t.Errorf("LoadSetting = %q, %v; want first", v, err)
	}
	s.Close()
	if _, err := r.LoadSetting(ctx, "absent"); err == nil {
		t.Error("LoadSetting after Close: no error")
	}
}
