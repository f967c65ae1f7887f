package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

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
	err := s.pool.QueryRow(ctx, `SELECT value FROM settings WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: setting %s: %w", name, err)
	}
	return v, nil
}
