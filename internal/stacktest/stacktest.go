// Package stacktest runs, for end-to-end tests, the server `a2awebcap serve` assembles: the
// engine on a SQLite file, the built-in agent and every binding on 127.0.0.1:0 (through
// internal/a2atest).
package stacktest

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// Tick is the interval between the progress updates of the built-in agent's "wait": a tenth
// of the real one, so that "wait 2" streams two updates in 0.2 s and "wait 60" runs long
// enough to be canceled.
const Tick = 100 * time.Millisecond

// Start runs the stack until the test ends and returns its base URL ("http://127.0.0.1:PORT").
// opts configures the bindings (nil: defaults). routes, when not nil, are mounted beside the
// A2A handler, which serves every other path. The engine serves an extended card (the public
// one named "<name> (extended)") to authenticated callers; push notifications are off.
func Start(t testing.TB, opts *binding.Options, routes map[string]http.Handler) string {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "tasks.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	agent := &agents.Builtin{Tick: Tick}
	card := agents.Card("a2awebcap", "the built-in agent, under test", "", agent.Skills()...)
	card.Capabilities.ExtendedAgentCard = true
	extended := *card
	extended.Name += " (extended)"
	srv := a2atest.Start(t, &a2atest.Options{
		Executor: agent,
		Card:     card,
		HTTP:     opts,
		Store:    st,
		Engine: &engine.Options{
			NoPushNotifications: true,
			ExtendedCard:        func(context.Context) (*a2a.AgentCard, error) { return &extended, nil },
		},
		WrapHTTP: func(a2aHTTP http.Handler) http.Handler {
			mux := http.NewServeMux()
			for pattern, h := range routes {
				mux.Handle(pattern, h)
			}
			mux.Handle("/", a2aHTTP)
			return mux
		},
	})
	return srv.URL
}

// Bearer returns a binding.Options.Authenticate that maps "Authorization: Bearer TOKEN" to the
// principal tokens[TOKEN]. No Authorization header is anonymous; an unknown token is
// a2a.ErrUnauthenticated.
func Bearer(tokens map[string]string) func(context.Context, http.Header) (*a2asrv.User, error) {
	return func(_ context.Context, h http.Header) (*a2asrv.User, error) {
		v := h.Get("Authorization")
		if v == "" {
			return nil, nil
		}
		token, ok := strings.CutPrefix(v, "Bearer ")
		name, known := tokens[token]
		if !ok || !known {
			return nil, fmt.Errorf("%w: unknown bearer token", a2a.ErrUnauthenticated)
		}
		return a2asrv.NewAuthenticatedUser(name, nil), nil
	}
}
