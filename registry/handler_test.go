package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/registry"
)

// tokens authenticates "Bearer alice" and "Bearer bob"; anything else is refused, and no
// Authorization is anonymous.
func tokens(_ context.Context, h http.Header) (*a2asrv.User, error) {
	v := h.Get("Authorization")
	switch v {
	case "":
		return nil, binding.ErrNoCredentials
	case "Bearer alice", "Bearer bob":
		return &a2asrv.User{Name: strings.TrimPrefix(v, "Bearer "), Authenticated: true}, nil
	}
	return nil, a2a.NewError(a2a.ErrUnauthenticated, "unknown token")
}

// registryServer serves a registry over HTTP with authentication, and returns its URL.
func registryServer(t *testing.T) string {
	t.Helper()
	st, err := registry.OpenSQLite(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r, _ := newRegistry(t, st, nil)
	h := r.Handler(&registry.HandlerOptions{Guard: binding.NewServiceGuard(&binding.Options{
		Authenticate: tokens, LoginThrottle: &binding.LoginThrottle{PerAddress: 3, Delay: -1}})})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); _ = h.(interface{ Close() error }).Close() })
	return srv.URL
}

func as(url, token string) *registry.Client {
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return registry.NewClient(url, &registry.ClientOptions{Header: h})
}

// TestHTTP: the JSON API, two principals, anonymous search, refusals with their statuses.
func TestHTTP(t *testing.T) {
	t.Parallel()
	url := registryServer(t)
	ctx := t.Context()
	a := newAgent(t, "researcher", research)
	alice, bob, anon := as(url, "alice"), as(url, "bob"), as(url, "")

	e, err := alice.Register(ctx, a.URL)
	if err != nil || e.Card.Name != "researcher" || !e.Mine {
		t.Fatalf("alice registers: %+v, %v", e, err)
	}
	if _, err := anon.Register(ctx, a.URL); !errors.Is(err, registry.ErrAuthentication) {
		t.Errorf("anonymous registration: %v, want UNAUTHENTICATED", err)
	}
	p, err := anon.Search(ctx, registry.Query{Skill: "research"})
	if err != nil || len(p.Agents) != 1 || p.Agents[0].Mine {
		t.Fatalf("anonymous search: %+v, %v", p, err)
	}
	if got, err := bob.Get(ctx, e.ID); err != nil || got.Mine || got.Registrations != 1 {
		t.Errorf("bob's view: %+v, %v", got, err)
	}
	var rerr *registry.Error
	if err := bob.Unregister(ctx, e.ID); !errors.As(err, &rerr) || rerr.Status != http.StatusNotFound {
		t.Errorf("bob removing alice's: %v", err)
	}
	if _, err := alice.Get(ctx, "nope"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Get(nope): %v", err)
	}
	if _, err := alice.Register(ctx, "http://x/#f"); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("a bad URL: %v", err)
	}
	if _, err := alice.Search(ctx, registry.Query{PageSize: 1000}); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("pageSize 1000: %v", err)
	}
	// Bodies: JSON only, strict, bounded.
	post := func(ctype, body string) int {
		req, _ := http.NewRequest(http.MethodPost, url+registry.AgentsPath, strings.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, c := range map[string]struct {
		ctype, body string
		want        int
	}{
		"text/plain":    {"text/plain", `{"url": "` + a.URL + `"}`, http.StatusUnsupportedMediaType},
		"unknown key":   {"application/json", `{"url": "` + a.URL + `", "URL": "http://evil/"}`, http.StatusBadRequest},
		"duplicate key": {"application/json", `{"url": "x", "url": "` + a.URL + `"}`, http.StatusBadRequest},
		"huge":          {"application/json", `{"url": "` + strings.Repeat("a", 20000) + `"}`, http.StatusBadRequest},
		"ok":            {"application/json", `{"url": "` + a.URL + `"}`, http.StatusOK},
	} {
		if got := post(c.ctype, c.body); got != c.want {
			t.Errorf("POST %s: %d, want %d", name, got, c.want)
		}
	}
	// A page of another site may not register (cross-site), even anonymously allowed reads.
	req, _ := http.NewRequest(http.MethodPost, url+registry.AgentsPath, strings.NewReader(`{"url": "`+a.URL+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site POST: %v %v, want 403", resp, err)
	}
	// Wrong credentials are throttled like the bindings'.
	bad := as(url, "mallory")
	var last error
	for range 5 {
		_, last = bad.Search(ctx, registry.Query{})
	}
	if !errors.As(last, &rerr) || rerr.Status != http.StatusTooManyRequests {
		t.Errorf("repeated bad credentials: %v, want 429", last)
	}
}

// TestCapnweb: the registry's capnweb endpoint: search as anyone, register after authenticate.
func TestCapnweb(t *testing.T) {
	t.Parallel()
	url := registryServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a := newAgent(t, "researcher", research)
	s, err := capnweb.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+registry.CapnwebPath, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Main().Call("register", a.URL).Await(ctx); err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("anonymous register over capnweb: %v", err)
	}
	if _, err := s.Main().Call("authenticate", map[string]any{"Authorization": "Bearer nobody"}).Await(ctx); err == nil {
		t.Error("authenticate with a bad token succeeded")
	}
	aliceReg := s.Main().Call("authenticate", map[string]any{"Authorization": "Bearer alice"})
	// The answers are the JSON the HTTP endpoints give: read them as such.
	decode := func(p *capnweb.Promise, dst any) error {
		var raw json.RawMessage
		if err := p.Decode(ctx, &raw); err != nil {
			return err
		}
		return json.Unmarshal(raw, dst)
	}
	var e registry.Entry
	if err := decode(aliceReg.Call("register", a.URL), &e); err != nil {
		t.Fatalf("register: %v", err)
	}
	if e.Card == nil || e.Card.Name != "researcher" || !e.Mine {
		t.Errorf("entry over capnweb = %+v", e)
	}
	var p registry.Page
	if err := decode(s.Main().Call("search", map[string]any{"tag": "web"}), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Agents) != 1 || p.Agents[0].ID != e.ID || p.Agents[0].Mine {
		t.Errorf("search over capnweb = %+v", p)
	}
	var got json.RawMessage
	if err := s.Main().Call("get", "nope").Decode(ctx, &got); err == nil || !strings.Contains(err.Error(), "no agent") {
		t.Errorf("get(nope) = %v", err)
	}
	if _, err := aliceReg.Call("unregister", e.ID).Await(ctx); err != nil {
		t.Errorf("unregister: %v", err)
	}
}
