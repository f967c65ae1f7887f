package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"
)

// check runs s on the request and compares the principal or the refusal.
func check(t *testing.T, ctx context.Context, s Scheme, h http.Header, want string, wantErr error) {
	t.Helper()
	u, err := s.Authenticate(ctx, h)
	switch {
	case wantErr != nil:
		if !errors.Is(err, wantErr) {
			t.Errorf("%s.Authenticate() = %v, %v; want %v", s.Name(), u, err, wantErr)
		}
	case err != nil || u.Name != want:
		t.Errorf("%s.Authenticate() = %v, %v; want %s", s.Name(), u, err, want)
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	keys := map[string]string{"k-alice": "alice", "k-bob": "bob"}
	tests := []struct {
		loc     a2a.APIKeySecuritySchemeLocation
		h       http.Header
		query   string
		want    string
		wantErr error
	}{
		{loc: "header", h: http.Header{"X-Api-Key": {"k-alice"}}, want: "alice"},
		{loc: "header", h: http.Header{"X-Api-Key": {"k-bob"}}, want: "bob"},
		{loc: "header", h: http.Header{"X-Api-Key": {"k-alic"}}, wantErr: a2a.ErrUnauthenticated},
		{loc: "header", h: http.Header{"X-Api-Key": {""}}, wantErr: a2a.ErrUnauthenticated},
		{loc: "header", h: http.Header{}, wantErr: errAbsent},
		{loc: "cookie", h: http.Header{"Cookie": {"a=b; X-API-Key=k-bob"}}, want: "bob"},
		{loc: "cookie", h: http.Header{"Cookie": {"X-API-Key=wrong"}}, wantErr: a2a.ErrUnauthenticated},
		{loc: "cookie", h: http.Header{"X-Api-Key": {"k-bob"}}, wantErr: errAbsent},
		{loc: "query", query: "X-API-Key=k-alice", want: "alice"},
		{loc: "query", query: "X-API-Key=nope", wantErr: a2a.ErrUnauthenticated},
		{loc: "query", h: http.Header{"X-Api-Key": {"k-alice"}}, wantErr: errAbsent},
	}
	for _, tt := range tests {
		s, err := NewAPIKey("apiKey", a2a.APIKeySecurityScheme{Location: tt.loc, Name: "X-API-Key"}, keys)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if tt.query != "" {
			r := httptest.NewRequest(http.MethodPost, "/?"+tt.query, nil)
			Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { ctx = r.Context() })).ServeHTTP(nil, r)
		}
		check(t, ctx, s, tt.h, tt.want, tt.wantErr)
	}
	if _, err := NewAPIKey("k", a2a.APIKeySecurityScheme{Location: "body", Name: "k"}, keys); err == nil {
		t.Error("NewAPIKey(location body) = nil error")
	}
}

func TestBasic(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewBasic("basic", map[string]string{"alice": string(hash)})
	if err != nil {
		t.Fatal(err)
	}
	basic := func(user, pass string) http.Header {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.SetBasicAuth(user, pass)
		return r.Header
	}
	check(t, t.Context(), s, basic("alice", "s3cret"), "alice", nil)
	check(t, t.Context(), s, basic("alice", "wrong"), "", a2a.ErrUnauthenticated)
	check(t, t.Context(), s, basic("mallory", "s3cret"), "", a2a.ErrUnauthenticated)
	check(t, t.Context(), s, http.Header{"Authorization": {"Basic !!!"}}, "", a2a.ErrUnauthenticated)
	check(t, t.Context(), s, http.Header{"Authorization": {"Bearer x"}}, "", errAbsent)
	if _, err := NewBasic("basic", map[string]string{"bob": "plaintext"}); err == nil {
		t.Error("NewBasic(not a bcrypt hash) = nil error")
	}
}

// introspector is an RFC 7662 endpoint: tokens map to answers; it counts calls and requires
// client credentials rs:secret.
type introspector struct {
	srv   *httptest.Server
	calls atomic.Int32
}

func newIntrospector(t *testing.T, answers map[string]map[string]any) *introspector {
	in := &introspector{}
	in.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.calls.Add(1)
		if id, secret, ok := r.BasicAuth(); !ok || id != "rs" || secret != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		a, ok := answers[r.PostFormValue("token")]
		if !ok {
			a = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(a)
	}))
	t.Cleanup(in.srv.Close)
	return in
}

func TestIntrospection(t *testing.T) {
	t.Parallel()
	exp := time.Now().Add(time.Hour).Unix()
	in := newIntrospector(t, map[string]map[string]any{
		"good":    {"active": true, "sub": "alice", "scope": "a2a", "exp": exp, "aud": "agent"},
		"revoked": {"active": false, "sub": "alice"},
		"expired": {"active": true, "sub": "alice", "scope": "a2a", "exp": time.Now().Add(-time.Hour).Unix(), "aud": "agent"},
		"other":   {"active": true, "sub": "alice", "scope": "a2a", "exp": exp, "aud": "other"},
		"noscope": {"active": true, "sub": "alice", "exp": exp, "aud": "agent"},
	})
	s, err := NewIntrospection("oauth", &IntrospectionOptions{URL: in.srv.URL, ClientID: "rs", ClientSecret: "secret", Audience: "agent", Scopes: []string{"a2a"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	check(t, ctx, s, bearerHeader("good"), "alice", nil)
	check(t, ctx, s, bearerHeader("good"), "alice", nil)
	if got := in.calls.Load(); got != 1 {
		t.Errorf("endpoint called %d times for one active token, want 1 (cached)", got)
	}
	check(t, ctx, s, bearerHeader("revoked"), "", a2a.ErrUnauthenticated)
	check(t, ctx, s, bearerHeader("unknown"), "", a2a.ErrUnauthenticated)
	check(t, ctx, s, bearerHeader("expired"), "", a2a.ErrUnauthenticated)
	check(t, ctx, s, bearerHeader("other"), "", a2a.ErrUnauthenticated)
	check(t, ctx, s, bearerHeader("noscope"), "", a2a.ErrUnauthorized)
	check(t, ctx, s, http.Header{}, "", errAbsent)

	wrong, err := NewIntrospection("oauth", &IntrospectionOptions{URL: in.srv.URL, ClientID: "rs", ClientSecret: "guess"})
	if err != nil {
		t.Fatal(err)
	}
	check(t, ctx, wrong, bearerHeader("good"), "", a2a.ErrUnauthenticated)
}

// Any: the first scheme with credentials decides; invalid credentials do not fall through;
// Declare says the same.
func TestAnyAndDeclare(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	jwtS := iss.jwtScheme(t, &JWTOptions{Scopes: []string{"a2a"}})
	in := newIntrospector(t, map[string]map[string]any{"opaque": {"active": true, "sub": "bob"}})
	intro, err := NewIntrospection("opaque", &IntrospectionOptions{URL: in.srv.URL, ClientID: "rs", ClientSecret: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := NewAPIKey("apiKey", a2a.APIKeySecurityScheme{Location: "header", Name: "X-API-Key"}, map[string]string{"k": "carol"})
	if err != nil {
		t.Fatal(err)
	}
	auth := Any(keys, jwtS, intro)
	run := func(h http.Header) (string, error) {
		u, err := auth(t.Context(), h)
		if err != nil {
			return "", err
		}
		return u.Name, nil
	}
	tok := iss.mint(t, iss.claims("alice"), map[string]any{"scope": "a2a"})
	for _, tt := range []struct {
		h       http.Header
		want    string
		wantErr error
	}{
		{h: bearerHeader(tok), want: "alice"},
		{h: bearerHeader("opaque"), want: "bob"},
		{h: http.Header{"X-Api-Key": {"k"}}, want: "carol"},
		{h: http.Header{"X-Api-Key": {"bad"}, "Authorization": {"Bearer " + tok}}, wantErr: a2a.ErrUnauthenticated},
		{h: bearerHeader(tamper(tok)), wantErr: a2a.ErrUnauthenticated},
		{h: http.Header{}, wantErr: a2a.ErrUnauthenticated},
	} {
		got, err := run(tt.h)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("Any(%v) = %q, %v; want %q, %v", tt.h, got, err, tt.want, tt.wantErr)
		}
	}
	if in.calls.Load() != 1 {
		t.Errorf("introspection called %d times, want 1: a JWT, valid or not, is not introspected", in.calls.Load())
	}

	card := a2a.AgentCard{SecuritySchemes: a2a.NamedSecuritySchemes{"stale": a2a.MutualTLSSecurityScheme{}}}
	Declare(&card, keys, jwtS, intro)
	wantSchemes := a2a.NamedSecuritySchemes{
		"apiKey": a2a.APIKeySecurityScheme{Location: "header", Name: "X-API-Key"},
		"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"},
		"opaque": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"},
	}
	wantReq := a2a.SecurityRequirementsOptions{{"apiKey": {}}, {"bearer": {"a2a"}}, {"opaque": {}}}
	if diff := cmp.Diff(wantSchemes, card.SecuritySchemes); diff != "" {
		t.Errorf("Declare() schemes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantReq, card.SecurityRequirements); diff != "" {
		t.Errorf("Declare() requirements (-want +got):\n%s", diff)
	}
	// The card survives the wire.
	b, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	var back a2a.AgentCard
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(card.SecuritySchemes, back.SecuritySchemes); diff != "" {
		t.Errorf("card JSON round trip (-want +got):\n%s", diff)
	}
	var _ func(context.Context, http.Header) (*a2asrv.User, error) = auth
}
