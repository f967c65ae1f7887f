package auth

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// FuzzJWT: whatever the bearer token, the scheme answers without panicking, and anything other
// than the seed's valid token is refused as UNAUTHENTICATED or not recognised.
func FuzzJWT(f *testing.F) {
	iss := newTestIssuer(f)
	s := iss.jwtScheme(f, nil)
	valid := iss.mint(f, iss.claims("alice"), map[string]any{"scope": "a2a"})
	f.Add(valid)
	f.Add(tamper(valid))
	f.Add(unsigned(f, "none", iss.claims("alice"), nil))
	f.Add("a.b.c")
	f.Add("..")
	f.Fuzz(func(t *testing.T, tok string) {
		u, err := s.Authenticate(t.Context(), bearerHeader(tok))
		switch {
		case err == nil:
			if u.Name != "alice" {
				t.Errorf("accepted %q as %v", tok, u)
			}
		case errors.Is(err, errAbsent), errors.Is(err, a2a.ErrUnauthenticated):
		default:
			t.Errorf("Authenticate(%q) = %v, want UNAUTHENTICATED", tok, err)
		}
	})
}

// FuzzClaimed: whatever the Authorization header, Claimed answers without panicking, reads a
// Basic user name back as sent, and claims nothing for a token too large to decode.
func FuzzClaimed(f *testing.F) {
	iss := newTestIssuer(f)
	f.Add("Bearer " + iss.mint(f, iss.claims("alice"), nil))
	f.Add("Basic YWxpY2U6cGFzcw==")
	f.Add("Bearer a.eyJzdWIiOjF9.c")
	f.Add("Bearer ..")
	f.Add("Basic !!!")
	f.Fuzz(func(t *testing.T, authorization string) {
		h := http.Header{"Authorization": {authorization}}
		got := Claimed(h)
		if user, _, ok := (&http.Request{Header: h}).BasicAuth(); ok && got != user {
			t.Errorf("Claimed(%q) = %q, want the Basic user %q", authorization, got, user)
		}
		if len(authorization) > maxClaimedJWT+len("Bearer ") && strings.HasPrefix(strings.ToLower(authorization), "bearer ") && got != "" {
			t.Errorf("Claimed decoded a %d-byte token", len(authorization))
		}
	})
}
