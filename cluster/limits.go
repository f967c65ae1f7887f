package cluster

// Cluster-wide quotas and rate limits, in PostgreSQL.
//
// Concurrency model
//
//   - Every count is one SQL statement, which PostgreSQL runs as one transaction: a quota slot
//     is taken by an INSERT … ON CONFLICT DO UPDATE … WHERE held < limit, which locks the
//     principal's counter row and re-checks the limit against its newest version, so replicas
//     taking slots at once never exceed it; a token is taken from a bucket the same way.
//   - Each replica's slots are also counted under its holder name (the replica's name and a
//     random suffix for this process), so that the slots of a replica that died can be given
//     back: every replica renews its heartbeat (every TTL/3) and reaps the replicas whose
//     heartbeat expired (every TTL), on the heartbeat goroutine, which Open starts and Close
//     stops and waits for.
//   - The replica's name is a lease too (cluster_names): OpenLimits takes it, the heartbeat
//     renews it, Close gives it back, so that two live replicas never share a name (they would
//     renew each other's task leases).
//   - Limits holds no lock of its own: pgxpool is safe for concurrent use.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/internal/pgutil"
)

// LimitsOptions configure OpenLimits. The zero value (or nil) is the default for each field.
type LimitsOptions struct {
	// Replica names this replica (its slots are counted under the name and a random suffix).
	// It must be unique among live replicas: OpenLimits refuses a name another live replica
	// holds (ErrReplicaNameInUse), and takes the name of a replica that stopped — at once
	// after its Close, or once its heartbeat expired (OpenLimits waits for that). Default:
	// "replica".
	Replica string
	// TTL is how long a replica that stopped renewing its heartbeat keeps its slots before
	// the others give them back. Default 15 s.
	TTL time.Duration
	// Schema, if set, is the PostgreSQL schema of the tables (created if missing).
	Schema string
	// MaxConns is the size of the connection pool. Default: pgxpool's.
	MaxConns int32
	// Logger receives heartbeat failures. Nil means slog.Default().
	Logger *slog.Logger
}

// Limits counts the quota slots and rate-limit tokens of every replica together, in the
// PostgreSQL database they share: give it to binding.Quotas.Shared and binding.RateLimit.Shared.
// It is safe for concurrent use.
type Limits struct {
	pool   *pgxpool.Pool
	name   string // the replica's name, held in cluster_names by holder
	holder string
	ttl    time.Duration
	log    *slog.Logger

	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// ErrReplicaNameInUse is the error of OpenLimits when another live replica holds the replica
// name.
var ErrReplicaNameInUse = errors.New("cluster: the replica name is in use by another live replica")

var (
	_ binding.QuotaCounter = (*Limits)(nil)
	_ binding.RateCounter  = (*Limits)(nil)
)

// limitsMigrations[i] takes the tables from version i to i+1. Append only.
var limitsMigrations = []string{
	`
CREATE TABLE cluster_replicas (
	holder      text        NOT NULL PRIMARY KEY,
	alive_until timestamptz NOT NULL
);
CREATE TABLE cluster_quota (
	quota text    NOT NULL,
	key   text    NOT NULL,
	held  integer NOT NULL,
	PRIMARY KEY (quota, key)
);
CREATE TABLE cluster_quota_held (
	quota  text    NOT NULL,
	key    text    NOT NULL,
	holder text    NOT NULL,
	n      integer NOT NULL,
	PRIMARY KEY (quota, key, holder)
);
CREATE INDEX cluster_quota_held_holder ON cluster_quota_held (holder);
CREATE TABLE cluster_rate (
	key     text             NOT NULL PRIMARY KEY,
	tokens  double precision NOT NULL,
	at      timestamptz      NOT NULL,
	full_at timestamptz      NOT NULL
);
CREATE INDEX cluster_rate_full ON cluster_rate (full_at);
`,
	// 2: which replica uses each agent instance (agent.Ownership); epoch counts the changes of
	// hands.
	`
CREATE TABLE cluster_instances (
	agent     text        NOT NULL,
	tenant    text        NOT NULL,
	principal text        NOT NULL,
	holder    text        NOT NULL,
	until     timestamptz NOT NULL,
	epoch     bigint      NOT NULL,
	PRIMARY KEY (agent, tenant, principal)
);
`,
	// 3: which live replica holds each replica name (holder is its Limits' holder).
	`
CREATE TABLE cluster_names (
	name        text        NOT NULL PRIMARY KEY,
	holder      text        NOT NULL,
	alive_until timestamptz NOT NULL
);
`,
}

// OpenLimits connects to the database of dsn, creates or migrates its tables (cluster_*), takes
// the replica's name, and registers its heartbeat. If another live replica holds the name it
// returns ErrReplicaNameInUse: it watches the holder's heartbeat meanwhile, for at most the time
// left on it, so that the name of a replica that died is taken once its heartbeat expired.
func OpenLimits(ctx context.Context, dsn string, opts *LimitsOptions) (*Limits, error) {
	var o LimitsOptions
	if opts != nil {
		o = *opts
	}
	if o.TTL <= 0 {
		o.TTL = 15 * time.Second
	}
	if o.Replica == "" {
		o.Replica = "replica"
	}
	pool, err := pgutil.Open(ctx, dsn, o.Schema, o.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("cluster: limits: %w", err)
	}
	if err := limitsSchema.Apply(ctx, pool, o.Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cluster: limits: %w", err)
	}
	l := &Limits{pool: pool, name: o.Replica, holder: o.Replica + "/" + rand.Text()[:8], ttl: o.TTL, log: o.Logger,
		quit: make(chan struct{}), done: make(chan struct{})}
	if l.log == nil {
		l.log = slog.Default()
	}
	if err := l.claimName(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := l.beat(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cluster: limits: %w", err)
	}
	go l.heartbeat()
	return l, nil
}

// limitsSchema is the tables of Limits (cluster_*).
var limitsSchema = &pgutil.Migrations{Name: "cluster", Table: "cluster_schema_version", Steps: limitsMigrations}

// interval is d as SQL microseconds, for "… * interval '1 microsecond'".
func micros(d time.Duration) int64 { return max(d.Microseconds(), 1) }

// claimName takes the replica's name for l.holder: at once if it is free (never held, given
// back, or its holder's heartbeat expired); else it watches the holder's heartbeat, and
// refuses the name as soon as it sees it renewed (or taken by yet another replica), or takes it
// once it expired.
func (l *Limits) claimName(ctx context.Context) error {
	var seenHolder, seenUntil string
	for {
		var (
			claimed       bool
			holder, until string
			left          float64 // seconds the holder's heartbeat has left
		)
		// The sub-selects see the row as it was before the statement: the holder's, when
		// the name is not claimed.
		err := l.pool.QueryRow(ctx, `
			WITH c AS (
				INSERT INTO cluster_names AS n (name, holder, alive_until)
				VALUES ($1, $2, statement_timestamp() + $3::bigint * interval '1 microsecond')
				ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, alive_until = excluded.alive_until
				WHERE n.holder = excluded.holder OR n.alive_until < statement_timestamp()
				RETURNING 1
			)
			SELECT EXISTS (SELECT 1 FROM c),
				coalesce((SELECT holder FROM cluster_names WHERE name = $1), ''),
				coalesce((SELECT alive_until::text FROM cluster_names WHERE name = $1), ''),
				coalesce((SELECT greatest(extract(epoch FROM alive_until - statement_timestamp())::float8, 0)
					FROM cluster_names WHERE name = $1), 0)`,
			l.name, l.holder, micros(l.ttl)).Scan(&claimed, &holder, &until, &left)
		if err != nil {
			return fmt.Errorf("cluster: replica name %q: %w", l.name, err)
		}
		if claimed {
			return nil
		}
		if seenHolder != "" && (holder != seenHolder || until != seenUntil) {
			return fmt.Errorf("%w: %q (it renews its heartbeat; give each replica a name of its own)", ErrReplicaNameInUse, l.name)
		}
		seenHolder, seenUntil = holder, until
		wait := min(time.Duration(left*float64(time.Second))+time.Millisecond, 100*time.Millisecond)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("%w: %q (waiting for its heartbeat to expire: %w)", ErrReplicaNameInUse, l.name, context.Cause(ctx))
		}
	}
}

// errNameLost is beat's error when another replica took this one's name: this replica's
// heartbeat had expired (it was cut off from the database longer than its TTL).
var errNameLost = errors.New("another replica took this replica's name after its heartbeat expired")

// beat renews this replica's heartbeat, and its hold on its name.
func (l *Limits) beat(ctx context.Context) error {
	var named bool
	err := l.pool.QueryRow(ctx, `
		WITH r AS (
			INSERT INTO cluster_replicas (holder, alive_until) VALUES ($1, statement_timestamp() + $2::bigint * interval '1 microsecond')
			ON CONFLICT (holder) DO UPDATE SET alive_until = excluded.alive_until
		), n AS (
			UPDATE cluster_names SET alive_until = statement_timestamp() + $2::bigint * interval '1 microsecond'
			WHERE name = $3 AND holder = $1
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM n)`, l.holder, micros(l.ttl), l.name).Scan(&named)
	if err == nil && !named {
		err = errNameLost
	}
	return err
}

// reap gives back the slots of the replicas whose heartbeat expired, and forgets buckets
// that have refilled and counters at zero. It returns how many replicas it reaped.
func (l *Limits) reap(ctx context.Context) (int, error) {
	var n int
	err := l.pool.QueryRow(ctx, `
		WITH dead AS (
			DELETE FROM cluster_replicas WHERE alive_until < statement_timestamp() RETURNING holder
		), held AS (
			DELETE FROM cluster_quota_held h USING dead WHERE h.holder = dead.holder RETURNING h.quota, h.key, h.n
		), sums AS (
			SELECT quota, key, sum(n) AS n FROM held GROUP BY quota, key
		), fixed AS (
			UPDATE cluster_quota q SET held = greatest(q.held - sums.n, 0) FROM sums
			WHERE q.quota = sums.quota AND q.key = sums.key
		)
		SELECT count(*) FROM dead`).Scan(&n)
	if err != nil {
		return 0, err
	}
	if _, err := l.pool.Exec(ctx, `DELETE FROM cluster_rate WHERE full_at < statement_timestamp()`); err != nil {
		return n, err
	}
	if _, err := l.pool.Exec(ctx, `DELETE FROM cluster_names WHERE alive_until < statement_timestamp()`); err != nil {
		return n, err
	}
	_, err = l.pool.Exec(ctx, `DELETE FROM cluster_quota q WHERE held = 0
		AND NOT EXISTS (SELECT 1 FROM cluster_quota_held h WHERE h.quota = q.quota AND h.key = q.key AND h.n > 0)`)
	return n, err
}

// heartbeat renews the heartbeat and reaps dead replicas until Close.
func (l *Limits) heartbeat() {
	defer close(l.done)
	beat := time.NewTicker(l.ttl / 3)
	defer beat.Stop()
	reap := time.NewTicker(l.ttl)
	defer reap.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-beat.C:
			ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
			switch err := l.beat(ctx); {
			case errors.Is(err, errNameLost):
				l.log.Error("cluster: another replica now has this replica's name: two replicas share it (restart this one)", "replica", l.name)
			case err != nil:
				l.log.Error("cluster: cannot renew this replica's heartbeat; its quota slots will be given back by its peers", "err", err)
			}
			cancel()
		case <-reap.C:
			ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
			if n, err := l.reap(ctx); err != nil {
				l.log.Error("cluster: cannot reap stopped replicas' quota slots", "err", err)
			} else if n > 0 {
				l.log.Warn("cluster: gave back the quota slots of stopped replicas", "replicas", n)
			}
			cancel()
		}
	}
}

// Acquire implements binding.QuotaCounter.
func (l *Limits) Acquire(ctx context.Context, quota, key string, limit int) (bool, error) {
	var n int
	err := l.pool.QueryRow(ctx, `
		WITH c AS (
			INSERT INTO cluster_quota AS q (quota, key, held) VALUES ($1, $2, 1)
			ON CONFLICT (quota, key) DO UPDATE SET held = q.held + 1 WHERE q.held < $3
			RETURNING 1
		), h AS (
			INSERT INTO cluster_quota_held AS h (quota, key, holder, n) SELECT $1, $2, $4, 1 FROM c
			ON CONFLICT (quota, key, holder) DO UPDATE SET n = h.n + 1
		)
		SELECT count(*) FROM c`, quota, key, limit, l.holder).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("cluster: quota %s: %w", quota, err)
	}
	return n == 1, nil
}

// Release implements binding.QuotaCounter.
func (l *Limits) Release(ctx context.Context, quota, key string) error {
	_, err := l.pool.Exec(ctx, `
		WITH h AS (
			UPDATE cluster_quota_held SET n = n - 1 WHERE quota = $1 AND key = $2 AND holder = $3 AND n > 0
			RETURNING 1
		)
		UPDATE cluster_quota SET held = held - 1 WHERE quota = $1 AND key = $2 AND held > 0 AND EXISTS (SELECT 1 FROM h)`,
		quota, key, l.holder)
	if err != nil {
		return fmt.Errorf("cluster: quota %s: %w", quota, err)
	}
	return nil
}

// Held returns how many slots of quota key holds across the cluster, for tests and metrics.
func (l *Limits) Held(ctx context.Context, quota, key string) (int, error) {
	var n int
	err := l.pool.QueryRow(ctx, `SELECT coalesce(max(held), 0) FROM cluster_quota WHERE quota = $1 AND key = $2`, quota, key).Scan(&n)
	return n, err
}

// Take implements binding.RateCounter: the bucket is refilled, by the database's clock, for
// the time since it was last used, then a token taken if there is one.
func (l *Limits) Take(ctx context.Context, key string, perSecond float64, burst int) (bool, time.Duration, error) {
	if perSecond <= 0 || burst < 1 {
		return true, 0, nil
	}
	var tokens float64
	err := l.pool.QueryRow(ctx, `
		WITH now AS (SELECT statement_timestamp() AS t)
		INSERT INTO cluster_rate AS r (key, tokens, at, full_at)
		SELECT $1, $3::float8 - 1, now.t, now.t + (1 / $2::float8) * interval '1 second' FROM now
		ON CONFLICT (key) DO UPDATE SET
			tokens = least($3::float8, r.tokens + extract(epoch FROM statement_timestamp() - r.at)::float8 * $2::float8) - 1,
			at = statement_timestamp(),
			full_at = statement_timestamp() + (($3::float8 - least($3::float8, r.tokens + extract(epoch FROM statement_timestamp() - r.at)::float8 * $2::float8) + 1) / $2::float8) * interval '1 second'
		WHERE least($3::float8, r.tokens + extract(epoch FROM statement_timestamp() - r.at)::float8 * $2::float8) >= 1
		RETURNING tokens`, key, perSecond, burst).Scan(&tokens)
	if err == nil {
		return true, 0, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, 0, fmt.Errorf("cluster: rate limit: %w", err)
	}
	// No token: how long until there is one.
	var now float64
	err = l.pool.QueryRow(ctx, `SELECT least($2::float8, tokens + extract(epoch FROM statement_timestamp() - at)::float8 * $3::float8)
		FROM cluster_rate WHERE key = $1`, key, burst, perSecond).Scan(&now)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, 0, fmt.Errorf("cluster: rate limit: %w", err)
	}
	wait := time.Duration(math.Max(0, (1-now)/perSecond) * float64(time.Second))
	return false, wait, nil
}

// Close stops the heartbeat and gives back this replica's name and slots (a replica that shuts
// down holds none any more), then closes the connections. It is idempotent.
func (l *Limits) Close() error {
	l.once.Do(func() {
		close(l.quit)
		<-l.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = l.pool.Exec(ctx, `UPDATE cluster_names SET alive_until = '-infinity' WHERE name = $1 AND holder = $2`, l.name, l.holder)
		if _, err := l.pool.Exec(ctx, `UPDATE cluster_replicas SET alive_until = '-infinity' WHERE holder = $1`, l.holder); err == nil {
			_, _ = l.reap(ctx)
		}
		l.pool.Close()
	})
	return nil
}
