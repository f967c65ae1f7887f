package store

import "context"

// SettingReader is implemented by the stores of this module (sqlite, postgres, memory): it reads
// a setting without storing one, which LoadOrStore cannot. The capnweb binding keeps saved
// capabilities and their revocations as settings, so that every replica sharing the store sees
// a revocation on the next call.
type SettingReader interface {
	// LoadSetting returns the value stored under name by LoadOrStore, or ErrNotFound.
	LoadSetting(ctx context.Context, name string) ([]byte, error)
}
