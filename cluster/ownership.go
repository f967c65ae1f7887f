package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/agent"
)

// Ownership returns the agent.Ownership of this replica on the database of l: a lease per agent
// instance, held for ttl from each Hold, by l's holder name; the epoch of an instance goes up
// each time another holder takes it. Give it to agent.HostOptions.Ownership.
func (l *Limits) Ownership(ttl time.Duration) agent.Ownership {
	if ttl <= 0 {
		ttl = l.ttl
	}
	return &ownership{l: l, ttl: ttl}
}

type ownership struct {
	l   *Limits
	ttl time.Duration
}

// Hold implements agent.Ownership: one statement, which takes the row when it is free (its
// lease expired, or released) or already this holder's, and leaves it otherwise.
func (o *ownership) Hold(ctx context.Context, key agent.Key) (int64, bool, error) {
	var epoch int64
	err := o.l.pool.QueryRow(ctx, `
		INSERT INTO cluster_instances AS i (agent, tenant, principal, holder, until, epoch)
		VALUES ($1, $2, $3, $4, statement_timestamp() + $5::bigint * interval '1 microsecond', 1)
		ON CONFLICT (agent, tenant, principal) DO UPDATE SET
			holder = excluded.holder, until = excluded.until,
			epoch = CASE WHEN i.holder = excluded.holder THEN i.epoch ELSE i.epoch + 1 END
		WHERE i.holder = excluded.holder OR i.until < statement_timestamp()
		RETURNING epoch`, key.Agent, key.Principal.Tenant, key.Principal.Name, o.l.holder, micros(o.ttl)).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("cluster: instance lease: %w", err)
	}
	return epoch, true, nil
}

// Release implements agent.Ownership.
func (o *ownership) Release(ctx context.Context, key agent.Key) error {
	_, err := o.l.pool.Exec(ctx, `UPDATE cluster_instances SET until = '-infinity'
		WHERE agent = $1 AND tenant = $2 AND principal = $3 AND holder = $4`,
		key.Agent, key.Principal.Tenant, key.Principal.Name, o.l.holder)
	if err != nil {
		return fmt.Errorf("cluster: instance lease: %w", err)
	}
	return nil
}

// Renewal implements agent.Ownership.
func (o *ownership) Renewal() time.Duration { return o.ttl / 3 }
