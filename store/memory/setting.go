package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

var _ store.SettingReader = (*Store)(nil)

// LoadSetting implements store.SettingReader.
func (s *Store) LoadSetting(ctx context.Context, name string) ([]byte, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	v, ok := s.settings[name]
	if !ok {
		return nil, fmt.Errorf("memory: setting %s: %w", name, store.ErrNotFound)
	}
	return slices.Clone(v), nil
}
