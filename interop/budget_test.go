package interop_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
)

// budgetAPI is the golden test API plus what the budget scenarios need.
type budgetAPI struct{ *capnwebtest.API }

func (budgetAPI) Range(n float64) []float64 {
	r := make([]float64, int(n))
	for i := range r {
		r[i] = float64(i)
	}
	return r
}
func (budgetAPI) Double(x float64) float64 { return 2 * x }
func (budgetAPI) Blob(n float64) string    { return strings.Repeat("b", int(n)) }

// budgetServer serves budgetAPI with opts and records the sessions it starts.
type budgetServer struct {
	url      string
	mu       sync.Mutex
	sessions []*capnweb.Session
}

func startBudgetServer(t *testing.T, opts capnweb.Options) *budgetServer {
	t.Helper()
	bs := &budgetServer{}
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return budgetAPI{&capnwebtest.API{}}, nil },
		&capnweb.HandlerOptions{Session: opts, OnSession: func(_ *http.Request, s *capnweb.Session) {
			bs.mu.Lock()
			bs.sessions = append(bs.sessions, s)
			bs.mu.Unlock()
		}})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	bs.url = "ws" + strings.TrimPrefix(ts.URL, "http") + "/"
	return bs
}

// only returns the one session the server started.
func (bs *budgetServer) only(t *testing.T) *capnweb.Session {
	t.Helper()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if len(bs.sessions) != 1 {
		t.Fatalf("%d sessions started, want 1", len(bs.sessions))
	}
	return bs.sessions[0]
}

// runBudgetScript runs budget.mjs's scenario against url and returns its JSON result.
func runBudgetScript(t *testing.T, url, scenario string, n int) map[string]any {
	t.Helper()
	node := needNode(t)
	args := []string{"budget.mjs", "--url", url, "--scenario", scenario}
	if n > 0 {
		args = append(args, "--n", strconv.Itoa(n))
	}
	out, err := exec.CommandContext(t.Context(), node, args...).Output()
	var res map[string]any
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node budget.mjs %s: %v; output %q; stderr:\n%s", scenario, err, out, stderr)
	}
	t.Logf("node budget.mjs %s: %s", scenario, strings.TrimSpace(string(out)))
	return res
}

// Issue 24: the stock npm client, against the Go server with its default limits, is not aborted
// where the JS server serves it: a long-lived client that never releases the intermediates of
// authenticate().getUser().greet() (40,000 chains, more exports than the old limit of 65,536),
// a .map() over 10,000 elements with one and with two calls per element (the old limit of 4,096
// pending calls), and a 20 MiB message (the old limit of 16 MiB). A client that floods the
// server with results it never pulls is still stopped, by the session's memory budget, and
// sees why.
func TestInteropBudgets(t *testing.T) {
	needNode(t)
	t.Run("long-lived client", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("40,000 chains")
		}
		bs := startBudgetServer(t, capnweb.Options{})
		stop := make(chan struct{})
		var exports int
		var held int64
		sampled := make(chan struct{})
		go func() { // the peak of what the server session holds while the script runs
			defer close(sampled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				bs.mu.Lock()
				for _, s := range bs.sessions {
					exports, held = max(exports, s.Stats().Exports), max(held, s.Held())
				}
				bs.mu.Unlock()
			}
		}()
		res := runBudgetScript(t, bs.url, "long-lived", 40000)
		close(stop)
		<-sampled
		if res["ok"] != true {
			t.Fatalf("a long-lived npm client was refused: %v", res["error"])
		}
		t.Logf("the server session held up to %d exports, %.1f MiB counted (its budget: %d MiB)", exports, float64(held)/(1<<20), capnweb.DefaultLimits.MaxHeldBytes>>20)
		if exports <= 1<<16 {
			t.Errorf("the npm client kept %d exports alive: the scenario no longer crosses the old table limit", exports)
		}
	})
	t.Run("map over 10,000 elements", func(t *testing.T) {
		t.Parallel()
		bs := startBudgetServer(t, capnweb.Options{})
		if res := runBudgetScript(t, bs.url, "map", 10000); res["ok"] != true {
			t.Fatalf("map: %v", res["error"])
		}
	})
	t.Run("20 MiB message", func(t *testing.T) {
		t.Parallel()
		bs := startBudgetServer(t, capnweb.Options{})
		if res := runBudgetScript(t, bs.url, "big-message", 20); res["ok"] != true {
			t.Fatalf("a 20 MiB message: %v", res["error"])
		}
	})
	t.Run("flood", func(t *testing.T) {
		t.Parallel()
		const budget = 8 << 20
		bs := startBudgetServer(t, capnweb.Options{Limits: capnweb.Limits{MaxHeldBytes: budget}})
		res := runBudgetScript(t, bs.url, "flood", 200)
		if res["ok"] != true || res["aborted"] != true {
			t.Fatalf("flood: %v", res)
		}
		if msg, _ := res["error"].(string); !strings.Contains(msg, "session memory budget exceeded") {
			t.Errorf("the npm client saw %q, want the budget's abort message", msg)
		}
		s := bs.only(t)
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), "memory budget") {
			t.Errorf("server session ended with %v, want its budget", err)
		}
	})
}
