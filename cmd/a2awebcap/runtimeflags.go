package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/pgstore"
	"github.com/a2awebcap/a2awebcap/agent/sqlitestore"
)

// runtimeConfig is how serve runs the agent runtime's instances.
type runtimeConfig struct {
	modelCalls, modelCallsPerPrincipal int
	idle                               time.Duration
	question                           time.Duration // agent.HostOptions.ParkTimeout
	envErr                             error
}

func (r *runtimeConfig) flags(fs *flag.FlagSet) {
	r.idle, r.question = 10*time.Minute, time.Hour
	for _, e := range []struct {
		name string
		dst  *int
	}{{"A2AWEBCAP_MODEL_CALLS", &r.modelCalls}, {"A2AWEBCAP_MODEL_CALLS_PER_PRINCIPAL", &r.modelCallsPerPrincipal}} {
		if v := envOr(e.name, ""); v != "" && r.envErr == nil {
			r.envErr = intFlag(e.dst, e.name)(v)
		}
	}
	if v := envOr("A2AWEBCAP_IDLE_EVICT", ""); v != "" && r.envErr == nil {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			r.envErr = fmt.Errorf("A2AWEBCAP_IDLE_EVICT=%q: want a duration such as 10m", v)
		}
		r.idle = d
	}
	if v := envOr("A2AWEBCAP_QUESTION_TIMEOUT", ""); v != "" && r.envErr == nil {
		r.envErr = durationFlag(&r.question, "A2AWEBCAP_QUESTION_TIMEOUT")(v)
	}
	fs.Func("model-calls", "with -agent runtime: model calls the server makes at once, for every caller together; more wait their turn in order, and their tasks say so; 0: no limit (A2AWEBCAP_MODEL_CALLS)",
		func(v string) error { r.envErr = nil; return intFlag(&r.modelCalls, "-model-calls")(v) })
	fs.Func("model-calls-per-principal", "with -agent runtime: model calls one principal's agent makes at once; 0: no limit (A2AWEBCAP_MODEL_CALLS_PER_PRINCIPAL)",
		func(v string) error {
			r.envErr = nil
			return intFlag(&r.modelCallsPerPrincipal, "-model-calls-per-principal")(v)
		})
	fs.Func("question-timeout", "with -agent runtime or -agents: how long a question an agent asks inside a turn (a call-by-call approval, a tool asking the user) waits for the answer; unanswered by then, the question is withdrawn and the turn goes on without it, its task ending with the turn (docs/sessions.md) (default 1h; A2AWEBCAP_QUESTION_TIMEOUT)",
		func(v string) error { r.envErr = nil; return durationFlag(&r.question, "-question-timeout")(v) })
	fs.DurationVar(&r.idle, "idle-evict", r.idle, "with -agent runtime or notes: how long a principal's agent stays in memory unused before it is put away (its memory stays in the -db store) (A2AWEBCAP_IDLE_EVICT)")
}

// limiter is the model-call bound of the flags; nil when there is none.
func (r *runtimeConfig) limiter() *agent.Limiter {
	if r.modelCalls == 0 && r.modelCallsPerPrincipal == 0 {
		return nil
	}
	return agent.NewLimiter(r.modelCalls, r.modelCallsPerPrincipal)
}

// runtimeStore opens the store of the runtime's instances beside the tasks of db: its SQLite
// file, its PostgreSQL database, or memory.
func runtimeStore(ctx context.Context, db string) (agent.Store, func(), error) {
	switch {
	case db == "memory":
		return agent.NewMemoryStore(), func() {}, nil
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		st, err := pgstore.Open(ctx, db, nil)
		if err != nil {
			return nil, nil, err
		}
		return st, func() { _ = st.Close() }, nil
	case strings.Contains(db, "://"):
		return nil, nil, fmt.Errorf("-db %q: unknown store", db)
	default:
		st, err := sqlitestore.Open(ctx, db)
		if err != nil {
			return nil, nil, err
		}
		return st, func() { _ = st.Close() }, nil
	}
}
