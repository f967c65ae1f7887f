package main

import (
	"context"
	"fmt"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/postgres"
)

func openPostgres(ctx context.Context, dsn string) (store.Store, error) {
	st, err := postgres.Open(ctx, dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("opening PostgreSQL store: %w", err)
	}
	return st, nil
}
