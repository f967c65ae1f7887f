package registry_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/netguard"
	"github.com/a2awebcap/a2awebcap/registry"
)

// loopback lets the registry reach the test agents, which listen on 127.0.0.1.
var loopback = netguard.New(&netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})

// agentServer serves an agent card at /.well-known/agent-card.json — as serve does, through the
// binding — and can be taken down (503) and up again.
type agentServer struct {
	*httptest.Server
	down atomic.Bool
	card atomic.Pointer[[]byte] // when set, served instead of the binding's card
}

func newAgent(t *testing.T, name string, skills ...a2a.AgentSkill) *agentServer {
	t.Helper()
	card := agents.Card(name, "a test agent", "", skills...)
	h := binding.NewHTTPHandler(a2asrv.NewHandler(&agents.Builtin{}), card, nil)
	a := &agentServer{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if b := a.card.Load(); b != nil && r.URL.Path == "/.well-known/agent-card.json" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(*b)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *agentServer) serveCard(b []byte) { a.card.Store(&b) }

var (
	research = a2a.AgentSkill{ID: "research", Name: "Web research", Description: "Finds things out", Tags: []string{"research", "web"}}
	writing  = a2a.AgentSkill{ID: "write", Name: "Writing", Description: "Writes", Tags: []string{"prose"}}
)

// stores are the stores every registry test runs on: SQLite in memory and in a file, and
// PostgreSQL when a server is there.
func stores(t *testing.T) map[string]func(t *testing.T) *registry.Store {
	return map[string]func(t *testing.T) *registry.Store{
		"sqlite-memory": func(t *testing.T) *registry.Store {
			st, err := registry.OpenSQLite(t.Context(), ":memory:")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
		"sqlite-file": func(t *testing.T) *registry.Store {
			st, err := registry.OpenSQLite(t.Context(), t.TempDir()+"/reg.db")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
		"postgres": postgresStore,
	}
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newRegistry(t *testing.T, st *registry.Store, o *registry.Options) (*registry.Registry, *clock) {
	t.Helper()
	c := &clock{t: time.Now()}
	var opts registry.Options
	if o != nil {
		opts = *o
	}
	if opts.Guard == nil {
		opts.Guard = loopback
	}
	opts.Tick = -1 // the tests call CheckDue
	opts.Now = c.now
	opts.Logger = slog.New(slog.DiscardHandler)
	r := registry.New(st, &opts)
	t.Cleanup(func() { _ = r.Close() })
	return r, c
}

var alice, bob = registry.Owner{Name: "alice"}, registry.Owner{Name: "bob"}

func names(p *registry.Page) []string {
	var out []string
	for _, e := range p.Agents {
		out = append(out, e.Card.Name)
	}
	return out
}

func TestRegisterAndSearch(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRegistry(t, open(t), nil)
			ctx := t.Context()
			ra := newAgent(t, "researcher", research)
			wa := newAgent(t, "writer", writing)
			e, created, err := r.Register(ctx, alice, ra.URL)
			if err != nil || !created {
				t.Fatalf("Register: %v, created %v", err, created)
			}
			if e.URL != ra.URL+"/.well-known/agent-card.json" || e.ID != registry.ID(e.URL) || e.State != registry.StateReachable ||
				e.Signature != registry.SignatureUnsigned || !e.Mine || e.Registrations != 1 || e.Card.Name != "researcher" {
				t.Errorf("entry = %+v", e)
			}
			if _, created, err := r.Register(ctx, alice, ra.URL+"/.well-known/agent-card.json"); err != nil || created {
				t.Errorf("registering the card URL again: %v, created %v; want the same registration", err, created)
			}
			if _, _, err := r.Register(ctx, alice, wa.URL+"/"); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				q    registry.Query
				want []string
			}{
				{registry.Query{}, []string{"researcher", "writer"}},
				{registry.Query{Skill: "research"}, []string{"researcher"}},
				{registry.Query{Skill: "WEB RES"}, []string{"researcher"}}, // a skill's name, any case
				{registry.Query{Skill: "write"}, []string{"writer"}},
				{registry.Query{Tag: "prose"}, []string{"writer"}},
				{registry.Query{Tag: "pro"}, nil}, // tags match whole
				{registry.Query{Name: "WRI"}, []string{"writer"}},
				{registry.Query{Skill: "research", Name: "writer"}, nil},
				{registry.Query{Skill: "%"}, nil}, // LIKE's wildcards are plain characters
				{registry.Query{State: registry.StateReachable}, []string{"researcher", "writer"}},
				{registry.Query{State: registry.StateUnreachable}, nil},
			} {
				p, err := r.Search(ctx, bob, tc.q)
				if err != nil {
					t.Fatalf("Search(%+v): %v", tc.q, err)
				}
				if got := names(p); strings.Join(got, ",") != strings.Join(tc.want, ",") {
					t.Errorf("Search(%+v) = %v, want %v", tc.q, got, tc.want)
				}
			}
			// Pages.
			p1, err := r.Search(ctx, bob, registry.Query{PageSize: 1})
			if err != nil || len(p1.Agents) != 1 || p1.NextPageToken == "" {
				t.Fatalf("page 1: %v %+v", err, p1)
			}
			p2, err := r.Search(ctx, bob, registry.Query{PageSize: 1, PageToken: p1.NextPageToken})
			if err != nil || names(p2)[0] != "writer" || p2.NextPageToken != "" {
				t.Fatalf("page 2: %v %+v", err, p2)
			}
			if _, err := r.Search(ctx, bob, registry.Query{PageToken: "garbage"}); !errors.Is(err, registry.ErrInvalid) {
				t.Errorf("a forged page token: %v", err)
			}
			got, err := r.Get(ctx, bob, e.ID)
			if err != nil || got.Mine || got.Card.Skills[0].ID != "research" {
				t.Errorf("Get as bob = %+v, %v", got, err)
			}
		})
	}
}

// TestUnreachableMarked: an agent that stops answering is marked unreachable — kept, with its
// card and why — and reachable again when it answers; one that serves garbage is invalid.
func TestUnreachableMarked(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, clk := newRegistry(t, open(t), &registry.Options{CheckInterval: time.Minute})
			ctx := t.Context()
			a := newAgent(t, "flaky", research)
			e, _, err := r.Register(ctx, alice, a.URL)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := r.CheckDue(ctx); err != nil || n != 0 {
				t.Fatalf("CheckDue before the interval: %d, %v", n, err)
			}
			a.down.Store(true)
			clk.add(2 * time.Minute)
			if n, err := r.CheckDue(ctx); err != nil || n != 1 {
				t.Fatalf("CheckDue: %d, %v", n, err)
			}
			got, err := r.Get(ctx, alice, e.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != registry.StateUnreachable || got.Failures != 1 || !strings.Contains(got.LastError, "503") || got.Card.Name != "flaky" {
				t.Errorf("after a failed check: state %s, failures %d, error %q, card %q", got.State, got.Failures, got.LastError, got.Card.Name)
			}
			if p, _ := r.Search(ctx, bob, registry.Query{Skill: "research"}); len(p.Agents) != 1 {
				t.Error("an unreachable agent was dropped from searches")
			}
			if p, _ := r.Search(ctx, bob, registry.Query{State: registry.StateReachable}); len(p.Agents) != 0 {
				t.Error("an unreachable agent is listed as reachable")
			}
			clk.add(2 * time.Minute)
			_, _ = r.CheckDue(ctx)
			if got, _ := r.Get(ctx, alice, e.ID); got.Failures != 2 {
				t.Errorf("failures = %d after two failed checks", got.Failures)
			}
			a.serveCard([]byte(`{"name": "x", "name": "y"}`))
			a.down.Store(false)
			clk.add(2 * time.Minute)
			_, _ = r.CheckDue(ctx)
			if got, _ := r.Get(ctx, alice, e.ID); got.State != registry.StateInvalid || got.Card.Name != "flaky" {
				t.Errorf("serving a card with a duplicate key: state %s, card %q; want invalid, the old card", got.State, got.Card.Name)
			}
			a.card.Store(nil)
			clk.add(2 * time.Minute)
			_, _ = r.CheckDue(ctx)
			got, _ = r.Get(ctx, alice, e.ID)
			if got.State != registry.StateReachable || got.Failures != 0 || got.LastError != "" || !got.ReachableAt.Equal(got.CheckedAt) {
				t.Errorf("back up: %+v", got)
			}
		})
	}
}

// signedCard returns the JSON of a card signed with a fresh key whose JWK set is at jku.
func signedCard(t *testing.T, name, jku string) (card []byte, jwks []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := agents.Card(name, "signed", "", research)
	if err := auth.SignCard(c, key, "k1", jku); err != nil {
		t.Fatal(err)
	}
	card, _ = json.Marshal(c)
	jwks, _ = json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Use: "sig", Algorithm: "ES256"}}})
	return card, jwks
}

// TestSignedCards: a signed card whose key is published on its own origin is verified; a card
// changed after signing is refused, and so is one whose key is elsewhere (untrusted); the
// operator's trusted keys verify too; a verified agent that loses its signatures is invalid.
func TestSignedCards(t *testing.T) {
	t.Parallel()
	st, err := registry.OpenSQLite(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r, clk := newRegistry(t, st, &registry.Options{CheckInterval: time.Minute})
	ctx := t.Context()

	a := newAgent(t, "unused")
	var card, jwks []byte
	signed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/.well-known/card-keys.json" {
			_, _ = w.Write(jwks)
			return
		}
		a.Config.Handler.ServeHTTP(w, req)
	}))
	t.Cleanup(signed.Close)
	// The card names its keys at its own origin: serve both from one server.
	card, jwks = signedCard(t, "signed", signed.URL+"/.well-known/card-keys.json")
	a.serveCard(card)
	e, _, err := r.Register(ctx, alice, signed.URL)
	if err != nil {
		t.Fatalf("Register(signed): %v", err)
	}
	if e.Signature != registry.SignatureVerified {
		t.Errorf("signature = %s, want verified", e.Signature)
	}

	// Tampered: the card changed after signing.
	var m map[string]any
	_ = json.Unmarshal(card, &m)
	m["description"] = "something else"
	tampered, _ := json.Marshal(m)
	b := newAgent(t, "unused")
	b.serveCard(tampered)
	tamperedSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/.well-known/card-keys.json" {
			_, _ = w.Write(jwks)
			return
		}
		b.Config.Handler.ServeHTTP(w, req)
	}))
	t.Cleanup(tamperedSrv.Close)
	if _, _, err := r.Register(ctx, alice, tamperedSrv.URL); !errors.Is(err, registry.ErrSignature) {
		t.Errorf("Register(tampered) = %v, want CARD_SIGNATURE_INVALID", err)
	}
	// Its key on another origin: not trusted, so not verified.
	c := newAgent(t, "unused")
	elsewhere, _ := signedCard(t, "elsewhere", signed.URL+"/.well-known/card-keys.json")
	c.serveCard(elsewhere)
	if _, _, err := r.Register(ctx, alice, c.URL); !errors.Is(err, registry.ErrSignature) {
		t.Errorf("Register(key on another origin) = %v, want CARD_SIGNATURE_INVALID", err)
	}
	// The operator's trusted keys verify wherever the card is.
	var ks jose.JSONWebKeySet
	_ = json.Unmarshal(jwks, &ks)
	trusting, _ := newRegistry(t, st, &registry.Options{TrustedKeys: &ks})
	d := newAgent(t, "unused")
	d.serveCard(card)
	if e, _, err := trusting.Register(ctx, bob, d.URL); err != nil || e.Signature != registry.SignatureVerified {
		t.Errorf("Register with trusted keys = %+v, %v", e, err)
	}
	// A verified agent that drops its signature is invalid at its next check, its card kept.
	unsigned, _ := json.Marshal(agents.Card("signed", "signed", "", research))
	a.serveCard(unsigned)
	clk.add(2 * time.Minute)
	_, _ = r.CheckDue(ctx)
	got, _ := r.Get(ctx, alice, e.ID)
	if got.State != registry.StateInvalid || got.Signature != registry.SignatureVerified || !strings.Contains(got.LastError, "no longer") {
		t.Errorf("after losing its signature: %s %s %q", got.State, got.Signature, got.LastError)
	}
	// RequireSigned refuses unsigned cards.
	strict, _ := newRegistry(t, st, &registry.Options{RequireSigned: true})
	if _, _, err := strict.Register(ctx, alice, newAgent(t, "plain").URL); !errors.Is(err, registry.ErrUnsigned) {
		t.Errorf("Register(unsigned) with RequireSigned = %v", err)
	}
}

// TestTwoPrincipals: registrations belong to who made them: another principal's registration
// of the same agent is theirs, and nobody removes another's.
func TestTwoPrincipals(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRegistry(t, open(t), nil)
			ctx := t.Context()
			a := newAgent(t, "shared", research)
			e, _, err := r.Register(ctx, alice, a.URL)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Unregister(ctx, bob, e.ID); !errors.Is(err, registry.ErrNotFound) {
				t.Errorf("bob removing alice's registration: %v, want NOT_FOUND", err)
			}
			eb, created, err := r.Register(ctx, bob, a.URL)
			if err != nil || !created || eb.Registrations != 2 || !eb.Mine {
				t.Fatalf("bob's registration: %+v, created %v, %v", eb, created, err)
			}
			if p, _ := r.Search(ctx, alice, registry.Query{}); len(p.Agents) != 1 {
				t.Errorf("one agent registered twice is listed %d times", len(p.Agents))
			}
			if err := r.Unregister(ctx, bob, e.ID); err != nil {
				t.Fatal(err)
			}
			if err := r.Unregister(ctx, bob, e.ID); !errors.Is(err, registry.ErrNotFound) {
				t.Errorf("removing twice: %v", err)
			}
			got, err := r.Get(ctx, alice, e.ID)
			if err != nil || got.Registrations != 1 || !got.Mine {
				t.Fatalf("alice's after bob left: %+v, %v", got, err)
			}
			if p, _ := r.Search(ctx, bob, registry.Query{Mine: true}); len(p.Agents) != 0 {
				t.Errorf("bob's registrations: %v", names(p))
			}
			if err := r.Unregister(ctx, alice, e.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Get(ctx, alice, e.ID); !errors.Is(err, registry.ErrNotFound) {
				t.Errorf("after the last registration went: %v", err)
			}
			// Tenants are apart: the same name in another tenant is another principal.
			if _, _, err := r.Register(ctx, registry.Owner{Tenant: "t2", Name: "alice"}, a.URL); err != nil {
				t.Fatal(err)
			}
			if p, _ := r.Search(ctx, alice, registry.Query{Mine: true}); len(p.Agents) != 0 {
				t.Error("alice of one tenant sees alice of another's registration as hers")
			}
		})
	}
}

// TestCaps: a principal cannot register more than MaxPerOwner agents, nor anyone more than
// MaxAgents in all.
func TestCaps(t *testing.T) {
	t.Parallel()
	st, err := registry.OpenSQLite(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r, _ := newRegistry(t, st, &registry.Options{MaxPerOwner: 2, MaxAgents: 3})
	ctx := t.Context()
	var urls []string
	for i := range 4 {
		urls = append(urls, newAgent(t, fmt.Sprint("a", i)).URL)
	}
	for _, u := range urls[:2] {
		if _, _, err := r.Register(ctx, alice, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.Register(ctx, alice, urls[2]); !errors.Is(err, registry.ErrFull) {
		t.Errorf("alice's third: %v, want REGISTRY_FULL", err)
	}
	if _, _, err := r.Register(ctx, alice, urls[0]); err != nil {
		t.Errorf("re-registering within the cap: %v", err)
	}
	if _, _, err := r.Register(ctx, bob, urls[2]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Register(ctx, bob, urls[3]); !errors.Is(err, registry.ErrFull) {
		t.Errorf("a fourth agent: %v, want REGISTRY_FULL", err)
	}
	if _, _, err := r.Register(ctx, bob, urls[0]); err != nil {
		t.Errorf("registering a listed agent when the registry is full: %v", err)
	}
}

// TestHostileAgents: the registry connects only where the guard allows, follows no redirect,
// and refuses what is not a card, cleanly.
func TestHostileAgents(t *testing.T) {
	t.Parallel()
	st, err := registry.OpenSQLite(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctx := t.Context()
	a := newAgent(t, "local", research)
	strict, _ := newRegistry(t, st, &registry.Options{Guard: netguard.New(nil)})
	if _, _, err := strict.Register(ctx, alice, a.URL); !errors.Is(err, registry.ErrUnreachable) || !strings.Contains(err.Error(), "not public") {
		t.Errorf("registering a loopback agent without an allow list: %v, want refused as not public", err)
	}
	for _, u := range []string{"http://169.254.169.254/latest", "http://[::ffff:127.0.0.1]:1/", "http://10.0.0.1/"} {
		if _, _, err := strict.Register(ctx, alice, u); !errors.Is(err, registry.ErrUnreachable) {
			t.Errorf("Register(%s) = %v, want refused", u, err)
		}
	}
	r, _ := newRegistry(t, st, &registry.Options{MaxCardBytes: 4096})
	redirect := httptest.NewServer(http.RedirectHandler(a.URL+"/.well-known/agent-card.json", http.StatusFound))
	t.Cleanup(redirect.Close)
	if _, _, err := r.Register(ctx, alice, redirect.URL); !errors.Is(err, registry.ErrUnreachable) || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("a redirect: %v", err)
	}
	for name, body := range map[string]string{
		"too large":     `{"name": "` + strings.Repeat("x", 5000) + `"}`,
		"duplicate key": `{"name": "a", "name": "b"}`,
		"no name":       `{"description": "x"}`,
		"not json":      `<html>`,
	} {
		b := newAgent(t, "x")
		b.serveCard([]byte(body))
		if _, _, err := r.Register(ctx, alice, b.URL); !errors.Is(err, registry.ErrUnreachable) {
			t.Errorf("a card that is %s: %v", name, err)
		}
	}
	for _, u := range []string{"", "ftp://x/", "http://user:pw@x/", "http://x/#frag", "/relative"} {
		if _, _, err := r.Register(ctx, alice, u); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Register(%q) = %v, want INVALID_ARGUMENT", u, err)
		}
	}
	if p, _ := r.Search(ctx, alice, registry.Query{}); len(p.Agents) != 0 {
		t.Errorf("refused agents were listed: %v", names(p))
	}
}

func TestCardURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://A.example":                             "https://a.example/.well-known/agent-card.json",
		"https://a.example:443/agents/r/":               "https://a.example/agents/r/.well-known/agent-card.json",
		"http://a.example:8080/card.json":               "http://a.example:8080/card.json",
		"http://[::1]:80/":                              "http://[::1]/.well-known/agent-card.json",
		"https://a.example/.well-known/agent-card.json": "https://a.example/.well-known/agent-card.json",
	} {
		if got, err := registry.CardURL(in); err != nil || got != want {
			t.Errorf("CardURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestReplicasSplitChecks: registries sharing one database (replicas) check each due agent
// once between them.
func TestReplicasSplitChecks(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		if name == "sqlite-memory" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			r1, c1 := newRegistry(t, st, &registry.Options{CheckInterval: time.Minute})
			r2, c2 := newRegistry(t, st, &registry.Options{CheckInterval: time.Minute})
			for i := range 6 {
				if _, _, err := r1.Register(t.Context(), alice, newAgent(t, fmt.Sprint("r", i)).URL); err != nil {
					t.Fatal(err)
				}
			}
			c1.add(2 * time.Minute)
			c2.add(2 * time.Minute)
			var n1, n2 int
			var wg sync.WaitGroup
			wg.Go(func() { n1, _ = r1.CheckDue(t.Context()) })
			wg.Go(func() { n2, _ = r2.CheckDue(t.Context()) })
			wg.Wait()
			if n1+n2 != 6 {
				t.Errorf("replicas checked %d + %d agents, want 6 in all", n1, n2)
			}
		})
	}
}

// TestChecker: the checker runs by itself and marks an agent that went down. (Real time: the
// interval is 100 ms and the bound 20 s, far above what the check takes.)
func TestChecker(t *testing.T) {
	t.Parallel()
	st, err := registry.OpenSQLite(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r := registry.New(st, &registry.Options{Guard: loopback, CheckInterval: 100 * time.Millisecond, Tick: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	a := newAgent(t, "goes down", research)
	e, _, err := r.Register(t.Context(), alice, a.URL)
	if err != nil {
		t.Fatal(err)
	}
	a.down.Store(true)
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := r.Get(t.Context(), alice, e.ID)
		if err == nil && got.State == registry.StateUnreachable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checker did not mark the agent: %+v, %v", got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	default:
		t.Error("Done not closed after Close")
	}
}
