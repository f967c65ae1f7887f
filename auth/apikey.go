package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// APIKey checks static API keys sent where its card entry says: a header, a query parameter
// (needs Middleware) or a cookie.
type APIKey struct {
	name string
	decl a2a.APIKeySecurityScheme
	keys []apiKeyEntry
}

type apiKeyEntry struct {
	digest    [sha256.Size]byte
	principal string
}

// NewAPIKey returns the scheme called name that accepts the keys of keys (key → principal)
// in the place decl names. Keys are compared in constant time over their SHA-256 digests, so
// neither the content nor the length of a key leaks through timing.
func NewAPIKey(name string, decl a2a.APIKeySecurityScheme, keys map[string]string) (*APIKey, error) {
	switch decl.Location {
	case a2a.APIKeySecuritySchemeLocationHeader, a2a.APIKeySecuritySchemeLocationQuery, a2a.APIKeySecuritySchemeLocationCookie:
	default:
		return nil, fmt.Errorf("auth: API key location %q is not header, query or cookie", decl.Location)
	}
	if decl.Name == "" {
		return nil, errors.New("auth: API key scheme without a parameter name")
	}
	s := &APIKey{name: name, decl: decl}
	for k, p := range keys {
		if k == "" || p == "" {
			return nil, errors.New("auth: empty API key or principal")
		}
		s.keys = append(s.keys, apiKeyEntry{digest: sha256.Sum256([]byte(k)), principal: p})
	}
	return s, nil
}

// Name implements Scheme.
func (s *APIKey) Name() string { return s.name }

func (s *APIKey) declaration() (a2a.SecurityScheme, []string) { return s.decl, nil }

// Authenticate implements Scheme.
func (s *APIKey) Authenticate(ctx context.Context, h http.Header) (*a2asrv.User, error) {
	key, ok := s.find(ctx, h)
	if !ok {
		return nil, errAbsent
	}
	d := sha256.Sum256([]byte(key))
	var principal string
	for _, e := range s.keys { // every entry, so the time does not depend on which matched
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			principal = e.principal
		}
	}
	if principal == "" {
		return nil, unauthenticated("auth: invalid API key", nil)
	}
	return newUser(s, principal, nil), nil
}

// find returns the key the request carries, if any.
func (s *APIKey) find(ctx context.Context, h http.Header) (string, bool) {
	switch s.decl.Location {
	case a2a.APIKeySecuritySchemeLocationHeader:
		if v := h.Values(s.decl.Name); len(v) > 0 {
			return v[0], true
		}
	case a2a.APIKeySecuritySchemeLocationCookie:
		r := http.Request{Header: http.Header{"Cookie": h.Values("Cookie")}}
		if c, err := r.Cookie(s.decl.Name); err == nil {
			return c.Value, true
		}
	case a2a.APIKeySecuritySchemeLocationQuery:
		if ri := requestInfoFrom(ctx); ri != nil && ri.query.Has(s.decl.Name) {
			return ri.query.Get(s.decl.Name), true
		}
	}
	return "", false
}
