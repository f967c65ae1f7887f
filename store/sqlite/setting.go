package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

var _ store.SettingReader = (*Store)(nil)

// LoadSetting implements store.SettingReader.
func (s *Store) LoadSetting(ctx context.Context, name string) ([]byte, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	var v []byte
	err := s.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: setting %s: %w", name, err)
	}
	return v, nil
}
