package auth

// Concurrency: an Introspection is shared by every request; mu guards cache and refused. The
// introspection call runs with mu released; two requests with the same new token may both
// call the endpoint, which is harmless.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/go-jose/go-jose/v4/jwt"
)

// maxCached bounds the introspection cache, so a flood of distinct valid tokens cannot grow it
// without end; maxRefused bounds the cache of refusals apart, so a flood of made-up tokens
// cannot push the valid ones out.
const (
	maxCached  = 10000
	maxRefused = 4096
)

// IntrospectionOptions configure an Introspection scheme.
type IntrospectionOptions struct {
	// URL is the authorization server's introspection endpoint (RFC 7662): https, or http on
	// a loopback address. Required.
	URL string
	// ClientID and ClientSecret authenticate this server to the endpoint (HTTP Basic, RFC
	// 6749 §2.3.1). Required.
	ClientID, ClientSecret string
	// HTTPClient calls the endpoint. Nil: a client with a 10 s timeout.
	HTTPClient *http.Client
	// Issuer, when set, must equal the response's iss. Zero: not checked.
	Issuer string
	// Audience, when set, must be among the response's aud. Zero: not checked.
	Audience string
	// Scopes must all be among the token's scopes; a token without them is UNAUTHORIZED.
	// Zero: none required.
	Scopes []string
	// CacheTTL is the longest an active answer is reused, never beyond the token's exp. Zero:
	// 5 minutes. A token revoked at the server keeps working here until then.
	CacheTTL time.Duration
	// RefusedTTL is how long the refusal of a token (inactive, expired, not for this agent,
	// lacking a scope) is reused, so that a client repeating a bad token does not make the
	// endpoint answer each time. A failure to reach the endpoint is not remembered. Zero:
	// 10 seconds. Negative: refusals are not remembered.
	RefusedTTL time.Duration
	// Card is how the card declares the scheme: HTTP Bearer or OAuth2. Nil: HTTP Bearer.
	Card a2a.SecurityScheme
}

// Introspection checks opaque OAuth2 bearer tokens by asking the authorization server (RFC
// 7662). Inactive tokens are refused; active answers are cached until the token's exp (at
// most CacheTTL). The principal is the answer's sub, else its username.
type Introspection struct {
	name string
	opts IntrospectionOptions
	decl a2a.SecurityScheme

	mu      sync.Mutex
	cache   map[[sha256.Size]byte]cachedUser
	refused map[[sha256.Size]byte]cachedUser // err set
}

type cachedUser struct {
	user  *a2asrv.User
	err   error // a refusal (the refused cache)
	until time.Time
}

// errEndpoint marks a refusal because the endpoint could not be asked: not remembered.
var errEndpoint = errors.New("auth: introspection endpoint failed")

// NewIntrospection returns the introspection scheme called name.
func NewIntrospection(name string, opts *IntrospectionOptions) (*Introspection, error) {
	if opts == nil || opts.URL == "" || opts.ClientID == "" {
		return nil, errors.New("auth: introspection needs an endpoint URL and client credentials")
	}
	if err := checkEndpoint(opts.URL); err != nil {
		return nil, err
	}
	s := &Introspection{name: name, opts: *opts, cache: map[[sha256.Size]byte]cachedUser{}, refused: map[[sha256.Size]byte]cachedUser{}}
	s.opts.CacheTTL = cmp.Or(s.opts.CacheTTL, 5*time.Minute)
	s.opts.RefusedTTL = cmp.Or(s.opts.RefusedTTL, 10*time.Second)
	switch s.decl = opts.Card; s.decl.(type) {
	case nil:
		s.decl = a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"}
	case a2a.HTTPAuthSecurityScheme, a2a.OAuth2SecurityScheme:
	default:
		return nil, errors.New("auth: an introspection scheme is declared as HTTP Bearer or OAuth2")
	}
	return s, nil
}

// Name implements Scheme.
func (s *Introspection) Name() string { return s.name }

func (s *Introspection) declaration() (a2a.SecurityScheme, []string) { return s.decl, s.opts.Scopes }

// Authenticate implements Scheme.
func (s *Introspection) Authenticate(ctx context.Context, h http.Header) (*a2asrv.User, error) {
	tok, ok := bearerToken(h)
	if !ok {
		return nil, errAbsent
	}
	key := sha256.Sum256([]byte(tok))
	now := time.Now()
	s.mu.Lock()
	c, hit := s.cache[key]
	r, refused := s.refused[key]
	s.mu.Unlock()
	if hit && now.Before(c.until) {
		return cloneUser(c.user), nil
	}
	if refused && now.Before(r.until) {
		return nil, r.err
	}
	u, until, err := s.introspect(ctx, tok, now)
	if err != nil {
		if s.opts.RefusedTTL > 0 && !errors.Is(err, errEndpoint) {
			s.remember(s.refused, maxRefused, key, cachedUser{err: err, until: now.Add(s.opts.RefusedTTL)}, now)
		}
		return nil, err
	}
	s.remember(s.cache, maxCached, key, cachedUser{user: u, until: until}, now)
	return cloneUser(u), nil
}

// introspect asks the endpoint about tok.
func (s *Introspection) introspect(ctx context.Context, tok string, now time.Time) (*a2asrv.User, time.Time, error) {
	form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(s.opts.ClientID), url.QueryEscape(s.opts.ClientSecret))
	var res struct {
		Active   bool             `json:"active"`
		Scope    string           `json:"scope"`
		Sub      string           `json:"sub"`
		Username string           `json:"username"`
		Exp      *jwt.NumericDate `json:"exp"`
		Nbf      *jwt.NumericDate `json:"nbf"`
		Iss      string           `json:"iss"`
		Aud      jwt.Audience     `json:"aud"`
	}
	if _, err := doJSON(s.opts.HTTPClient, req, &res); err != nil {
		return nil, time.Time{}, unauthenticated("auth: cannot verify bearer tokens now", fmt.Errorf("%w: %w", errEndpoint, err))
	}
	switch {
	case !res.Active:
		return nil, time.Time{}, unauthenticated("auth: bearer token is not active", nil)
	case res.Exp != nil && !now.Before(res.Exp.Time()):
		return nil, time.Time{}, unauthenticated("auth: bearer token expired", jwt.ErrExpired)
	case res.Nbf != nil && now.Before(res.Nbf.Time()):
		return nil, time.Time{}, unauthenticated("auth: bearer token not valid yet", jwt.ErrNotValidYet)
	case s.opts.Issuer != "" && res.Iss != s.opts.Issuer:
		return nil, time.Time{}, unauthenticated("auth: bearer token not for this agent", jwt.ErrInvalidIssuer)
	case s.opts.Audience != "" && !res.Aud.Contains(s.opts.Audience):
		return nil, time.Time{}, unauthenticated("auth: bearer token not for this agent", jwt.ErrInvalidAudience)
	}
	principal := cmp.Or(res.Sub, res.Username)
	if principal == "" {
		return nil, time.Time{}, unauthenticated("auth: bearer token names no principal", nil)
	}
	scopes := strings.Fields(res.Scope)
	if err := requireScopes(s.opts.Scopes, scopes); err != nil {
		return nil, time.Time{}, err
	}
	until := now.Add(s.opts.CacheTTL)
	if res.Exp != nil && res.Exp.Time().Before(until) {
		until = res.Exp.Time()
	}
	attrs := map[string]any{AttrScopes: scopes, AttrIssuer: res.Iss}
	if res.Exp != nil {
		attrs[AttrExpires] = res.Exp.Time()
	}
	return newUser(s, principal, attrs), until, nil
}

// remember puts an answer in cache (s.cache or s.refused), first dropping expired entries when
// it holds limit, then any entry.
func (s *Introspection) remember(cache map[[sha256.Size]byte]cachedUser, limit int, key [sha256.Size]byte, c cachedUser, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(cache) >= limit {
		for k, v := range cache {
			if !now.Before(v.until) {
				delete(cache, k)
			}
		}
		for k := range cache {
			if len(cache) < limit {
				break
			}
			delete(cache, k)
		}
	}
	cache[key] = c
}

// cloneUser copies a cached user, so a caller changing its attributes does not change the
// cache.
func cloneUser(u *a2asrv.User) *a2asrv.User {
	c := *u
	c.Attributes = maps.Clone(u.Attributes)
	return &c
}
