// Package pgutil is what the packages that keep their state in PostgreSQL (store/postgres,
// agent/pgstore, cluster) share: opening a pool on a DSN, in a schema of their own if asked,
// and migrating their tables, versioned, once however many replicas start together.
package pgutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects a pool to the database of dsn (a postgres:// URL or key=value string, as pgx
// takes), with at most maxConns connections (zero: pgxpool's default), every connection's
// search_path set to schema when it is not empty.
func Open(ctx context.Context, dsn, schema string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// Migrations are one package's tables, by version.
type Migrations struct {
	// Name names the tables in the advisory lock's key ("a2awebcap/"+Name+":"+schema) and in
	// errors ("cluster schema version 3"); empty: "schema version 3", under "a2awebcap/store".
	Name string
	// Table is the table holding the version, in one row.
	Table string
	// Steps[i] takes the tables from version i to i+1. Append only.
	Steps []string
	// After, if set, runs in the migration's transaction after the step to version v.
	After func(ctx context.Context, tx pgx.Tx, v int) error
}

// Apply brings the tables of m in schema (created if missing; empty: the search path's) up to
// the last version, in one transaction, under an advisory lock named after the schema, so that
// replicas starting together migrate once. A database newer than m is refused.
func (m *Migrations) Apply(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	lock, label := "a2awebcap/store:"+schema, "schema version"
	if m.Name != "" {
		lock, label = "a2awebcap/"+m.Name+":"+schema, m.Name+" schema version"
	}
	last := len(m.Steps)
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, lock); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if schema != "" {
			ident := pgx.Identifier{schema}.Sanitize()
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+ident+`; SET LOCAL search_path TO `+ident); err != nil {
				return fmt.Errorf("migrate: schema %s: %w", schema, err)
			}
		}
		table := pgx.Identifier{m.Table}.Sanitize()
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (version integer NOT NULL)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var version int
		switch err := tx.QueryRow(ctx, `SELECT version FROM `+table).Scan(&version); {
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (version) VALUES (0)`); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		case err != nil:
			return fmt.Errorf("migrate: %w", err)
		}
		if version > last {
			return fmt.Errorf("migrate: the database has %s %d, newer than this program's %d", label, version, last)
		}
		for v := version; v < last; v++ {
			if _, err := tx.Exec(ctx, m.Steps[v]); err != nil {
				return fmt.Errorf("migrate to %s %d: %w", label, v+1, err)
			}
			if m.After != nil {
				if err := m.After(ctx, tx, v+1); err != nil {
					return fmt.Errorf("migrate to %s %d: %w", label, v+1, err)
				}
			}
		}
		if version < last {
			if _, err := tx.Exec(ctx, `UPDATE `+table+` SET version = $1`, last); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		}
		return nil
	})
}
