package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// DefaultAlgorithms are the JWS algorithms a JWT scheme accepts when JWTOptions.Algorithms is
// empty: the asymmetric ones.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// JWTOptions configure a JWT scheme (NewJWT, NewOIDC).
type JWTOptions struct {
	// Issuer is the value the iss claim must equal. Required. For NewOIDC it is also where
	// discovery starts.
	Issuer string
	// Audience is a value the aud claim must contain. Required: a token the issuer minted for
	// another service must not work here.
	Audience string
	// JWKSURL is the issuer's key set: https, or http on a loopback address. Required by
	// NewJWT; NewOIDC discovers it.
	JWKSURL string
	// HTTPClient fetches keys and discovery documents. Nil: a client with a 10 s timeout.
	HTTPClient *http.Client
	// KeyTTL is how long a fetched key set is used before it is fetched again. Zero: 1 hour.
	KeyTTL time.Duration
	// KeyMinRefresh is the least time between two fetches of the key set, however many
	// tokens name unknown keys. Zero: 1 minute.
	KeyMinRefresh time.Duration
	// Algorithms are the JWS algorithms accepted. Zero: DefaultAlgorithms. "none" and the
	// HMAC algorithms (HS256…) are refused: the keys come from a public key set, and a token
	// "signed" with HMAC over a public key would verify (the algorithm-confusion attack).
	Algorithms []string
	// PrincipalClaim is the claim naming the principal. Zero: "sub".
	PrincipalClaim string
	// Scopes must all be among the token's scopes (the scope or scp claim); a token without
	// them is UNAUTHORIZED. Zero: none required.
	Scopes []string
	// ClockSkew is the leeway on exp, nbf and iat. Zero: 1 minute.
	ClockSkew time.Duration
	// Card is how the card declares the scheme: an HTTPAuthSecurityScheme (Bearer), an
	// OAuth2SecurityScheme or an OpenIDConnectSecurityScheme. Nil: HTTP Bearer, format JWT
	// (NewJWT) or OpenID Connect with the discovery URL (NewOIDC).
	Card a2a.SecurityScheme
}

// JWT checks bearer tokens that are JWTs (RFC 7519) signed by an issuer's published keys:
// signature, alg, iss, aud, exp, nbf. The principal is the sub claim (JWTOptions.PrincipalClaim),
// and the user's attributes hold the token's scopes (AttrScopes) and issuer (AttrIssuer).
type JWT struct {
	name      string
	opts      JWTOptions
	algs      []jose.SignatureAlgorithm
	keys      *keySet
	decl      a2a.SecurityScheme
	principal string
	skew      time.Duration
}

// NewJWT returns the JWT scheme called name.
func NewJWT(name string, opts *JWTOptions) (*JWT, error) {
	if opts == nil {
		return nil, errors.New("auth: JWT options required")
	}
	o := *opts
	if o.Issuer == "" || o.Audience == "" || o.JWKSURL == "" {
		return nil, errors.New("auth: JWT scheme needs an issuer, an audience and a key set URL")
	}
	if err := checkEndpoint(o.JWKSURL); err != nil {
		return nil, err
	}
	if len(o.Algorithms) == 0 {
		o.Algorithms = DefaultAlgorithms
	}
	s := &JWT{name: name, opts: o, principal: cmp.Or(o.PrincipalClaim, "sub"), skew: o.ClockSkew}
	for _, a := range o.Algorithms {
		if !slices.Contains(DefaultAlgorithms, a) {
			return nil, fmt.Errorf("auth: JWS algorithm %q is not allowed (only asymmetric ones are)", a)
		}
		s.algs = append(s.algs, jose.SignatureAlgorithm(a))
	}
	if s.skew == 0 {
		s.skew = time.Minute
	}
	s.keys = &keySet{
		url:        o.JWKSURL,
		client:     o.HTTPClient,
		ttl:        cmp.Or(o.KeyTTL, time.Hour),
		minRefresh: cmp.Or(o.KeyMinRefresh, time.Minute),
	}
	s.decl = o.Card
	switch s.decl.(type) {
	case nil:
		s.decl = a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"}
	case a2a.HTTPAuthSecurityScheme, a2a.OAuth2SecurityScheme, a2a.OpenIDConnectSecurityScheme:
	default:
		return nil, fmt.Errorf("auth: a JWT scheme cannot be declared as %T", s.decl)
	}
	return s, nil
}

// Name implements Scheme.
func (s *JWT) Name() string { return s.name }

func (s *JWT) declaration() (a2a.SecurityScheme, []string) { return s.decl, s.opts.Scopes }

// Authenticate implements Scheme. A bearer token that is not a compact JWS is not this
// scheme's (so Any can pass opaque tokens to an Introspection scheme); one that is must
// verify.
func (s *JWT) Authenticate(ctx context.Context, h http.Header) (*a2asrv.User, error) {
	raw, ok := bearerToken(h)
	if !ok || strings.Count(raw, ".") != 2 {
		return nil, errAbsent
	}
	tok, err := jwt.ParseSigned(raw, s.algs)
	if err != nil {
		return nil, unauthenticated("auth: invalid bearer token", err)
	}
	hdr := tok.Headers[0]
	keys, err := s.keys.lookup(ctx, hdr.KeyID)
	if errors.Is(err, errUnknownKey) {
		return nil, unauthenticated("auth: invalid bearer token", err)
	}
	if err != nil {
		return nil, unauthenticated("auth: cannot verify bearer tokens now", err)
	}
	var (
		std    jwt.Claims
		claims map[string]any
	)
	err = errUnknownKey
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != hdr.Algorithm {
			continue
		}
		if err = tok.Claims(k.Key, &std, &claims); err == nil {
			break
		}
	}
	if err != nil {
		return nil, unauthenticated("auth: invalid bearer token", err)
	}
	if std.Expiry == nil {
		return nil, unauthenticated("auth: bearer token without expiry", jwt.ErrExpired)
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: s.opts.Issuer, AnyAudience: jwt.Audience{s.opts.Audience}, Time: time.Now()}, s.skew)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return nil, unauthenticated("auth: bearer token expired", err)
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, unauthenticated("auth: bearer token not valid yet", err)
	case err != nil:
		return nil, unauthenticated("auth: bearer token not for this agent", err)
	}
	principal, _ := claims[s.principal].(string)
	if principal == "" {
		return nil, unauthenticated("auth: bearer token names no principal", nil)
	}
	scopes := scopesOf(claims)
	if err := requireScopes(s.opts.Scopes, scopes); err != nil {
		return nil, err
	}
	return newUser(s, principal, map[string]any{AttrScopes: scopes, AttrIssuer: std.Issuer, AttrExpires: std.Expiry.Time()}), nil
}

// bearerToken returns the token of an "Authorization: Bearer" header.
func bearerToken(h http.Header) (string, bool) {
	scheme, tok, _ := strings.Cut(h.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// scopesOf reads OAuth scopes from a space-separated scope claim (RFC 8693, RFC 9068) or an
// scp claim, string or array (Azure AD, Okta).
func scopesOf(claims map[string]any) []string {
	var out []string
	for _, name := range []string{"scope", "scp"} {
		switch v := claims[name].(type) {
		case string:
			out = append(out, strings.Fields(v)...)
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// requireScopes refuses a principal without every scope of want.
func requireScopes(want, have []string) error {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return unauthorized("auth: token lacks scope "+w, nil)
		}
	}
	return nil
}
