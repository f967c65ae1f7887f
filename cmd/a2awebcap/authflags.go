package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/store"
)

// authConfig is how serve authenticates callers. Zero: it does not.
type authConfig struct {
	apiKeys      keyFlag // KEY=PRINCIPAL
	apiKeysFile  string
	apiKeyHeader string
	jwtIssuer    string
	jwtAudience  string
	jwtScopes    string
	jwksURL      string
	oidcIssuer   string
	basicFile    string        // user:bcrypt-hash lines
	introspect   string        // RFC 7662 endpoint; client credentials from the environment
	mtls         bool          // -tls-client-ca is set: verified client certificates name principals
	refusedTTL   time.Duration // IntrospectionOptions.RefusedTTL (from -introspect-refused-ttl)
}

// keyFlag is a repeatable KEY=PRINCIPAL flag.
type keyFlag []string

func (k *keyFlag) String() string     { return fmt.Sprintf("%d keys", len(*k)) }
func (k *keyFlag) Set(v string) error { *k = append(*k, v); return nil }

func (a *authConfig) flags(fs *flag.FlagSet) {
	fs.Var(&a.apiKeys, "api-key", "accept the API `KEY=PRINCIPAL` in the -api-key-header header (repeatable; visible to ps: prefer -api-keys-file)")
	fs.StringVar(&a.apiKeysFile, "api-keys-file", envOr("A2AWEBCAP_API_KEYS_FILE", ""), "`file` of API keys, one KEY=PRINCIPAL a line, # comments (A2AWEBCAP_API_KEYS_FILE)")
	fs.StringVar(&a.apiKeyHeader, "api-key-header", envOr("A2AWEBCAP_API_KEY_HEADER", "X-API-Key"), "the header carrying API keys (A2AWEBCAP_API_KEY_HEADER)")
	fs.StringVar(&a.jwtIssuer, "jwt-issuer", envOr("A2AWEBCAP_JWT_ISSUER", ""), "accept bearer JWTs from this issuer `URL` (needs -jwks-url and -jwt-audience) (A2AWEBCAP_JWT_ISSUER)")
	fs.StringVar(&a.jwtAudience, "jwt-audience", envOr("A2AWEBCAP_JWT_AUDIENCE", ""), "the aud a bearer JWT must carry (A2AWEBCAP_JWT_AUDIENCE)")
	fs.StringVar(&a.jwtScopes, "jwt-scopes", envOr("A2AWEBCAP_JWT_SCOPES", ""), "comma-separated `scopes` a bearer token (JWT or introspected) must all carry; empty: none (A2AWEBCAP_JWT_SCOPES)")
	fs.StringVar(&a.jwksURL, "jwks-url", envOr("A2AWEBCAP_JWKS_URL", ""), "the -jwt-issuer's key set `URL` (A2AWEBCAP_JWKS_URL)")
	fs.StringVar(&a.basicFile, "basic-users-file", envOr("A2AWEBCAP_BASIC_USERS_FILE", ""), "accept HTTP Basic credentials of the users in this `file`, one user:bcrypt-hash a line (htpasswd -nB user), # comments; serve it over TLS (A2AWEBCAP_BASIC_USERS_FILE)")
	fs.StringVar(&a.introspect, "introspect-url", envOr("A2AWEBCAP_INTROSPECT_URL", ""), "accept opaque bearer tokens this RFC 7662 introspection endpoint `URL` says are active, asked with the client ID and secret in A2AWEBCAP_INTROSPECT_CLIENT_ID and A2AWEBCAP_INTROSPECT_CLIENT_SECRET; -jwt-audience and -jwt-scopes apply when set; after -jwt-issuer or -oidc-issuer, which take JWT-shaped tokens (A2AWEBCAP_INTROSPECT_URL)")
	fs.StringVar(&a.oidcIssuer, "oidc-issuer", envOr("A2AWEBCAP_OIDC_ISSUER", ""), "accept bearer JWTs from this OpenID provider `URL`, keys found by discovery (needs -jwt-audience) (A2AWEBCAP_OIDC_ISSUER)")
}

// schemes builds the configured schemes, in the order Any tries them.
func (a *authConfig) schemes(ctx context.Context) ([]auth.Scheme, error) {
	var out []auth.Scheme
	var scopes []string
	for sc := range strings.SplitSeq(a.jwtScopes, ",") {
		if sc = strings.TrimSpace(sc); sc != "" {
			scopes = append(scopes, sc)
		}
	}
	switch {
	case a.oidcIssuer != "" && a.jwtIssuer != "":
		return nil, errors.New("-oidc-issuer and -jwt-issuer: give one")
	case a.oidcIssuer != "":
		s, err := auth.NewOIDC(ctx, "oidc", &auth.JWTOptions{Issuer: a.oidcIssuer, Audience: a.jwtAudience, Scopes: scopes})
		if err != nil {
			return nil, fmt.Errorf("-oidc-issuer: %w", err)
		}
		out = append(out, s)
	case a.jwtIssuer != "":
		s, err := auth.NewJWT("bearer", &auth.JWTOptions{Issuer: a.jwtIssuer, Audience: a.jwtAudience, JWKSURL: a.jwksURL, Scopes: scopes})
		if err != nil {
			return nil, fmt.Errorf("-jwt-issuer: %w", err)
		}
		out = append(out, s)
	case a.jwksURL != "":
		return nil, errors.New("-jwks-url needs -jwt-issuer")
	case len(scopes) > 0 && a.introspect == "":
		return nil, errors.New("-jwt-scopes needs -jwt-issuer, -oidc-issuer or -introspect-url")
	}
	if a.introspect != "" {
		id, secret := os.Getenv("A2AWEBCAP_INTROSPECT_CLIENT_ID"), os.Getenv("A2AWEBCAP_INTROSPECT_CLIENT_SECRET")
		if id == "" || secret == "" {
			return nil, errors.New("-introspect-url needs A2AWEBCAP_INTROSPECT_CLIENT_ID and A2AWEBCAP_INTROSPECT_CLIENT_SECRET")
		}
		s, err := auth.NewIntrospection("introspection", &auth.IntrospectionOptions{
			URL: a.introspect, ClientID: id, ClientSecret: secret, Audience: a.jwtAudience, Scopes: scopes, RefusedTTL: a.refusedTTL})
		if err != nil {
			return nil, fmt.Errorf("-introspect-url: %w", err)
		}
		out = append(out, s)
	}
	if a.basicFile != "" {
		users, err := readLines(a.basicFile, "-basic-users-file")
		if err != nil {
			return nil, err
		}
		hashes := make(map[string]string, len(users))
		for _, l := range users {
			u, h, ok := strings.Cut(l, ":")
			if !ok || u == "" || h == "" {
				return nil, errors.New("-basic-users-file: lines are user:bcrypt-hash") // never echo a hash
			}
			if _, dup := hashes[u]; dup {
				return nil, fmt.Errorf("-basic-users-file: user %s given twice", u)
			}
			hashes[u] = h
		}
		s, err := auth.NewBasic("basic", hashes)
		if err != nil {
			return nil, fmt.Errorf("-basic-users-file: %w", err)
		}
		out = append(out, s)
	}
	keys, err := a.keys()
	if err != nil {
		return nil, err
	}
	if len(keys) > 0 {
		s, err := auth.NewAPIKey("apiKey", a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: a.apiKeyHeader}, keys)
		if err != nil {
			return nil, fmt.Errorf("-api-key: %w", err)
		}
		out = append(out, s)
	}
	if a.mtls {
		// Last: a request's explicit credentials speak before the connection's certificate.
		out = append(out, auth.NewMTLS("mtls", nil))
	}
	return out, nil
}

// keys reads -api-key and -api-keys-file.
func (a *authConfig) keys() (map[string]string, error) {
	lines := append([]string(nil), a.apiKeys...)
	if a.apiKeysFile != "" {
		file, err := readLines(a.apiKeysFile, "-api-keys-file")
		if err != nil {
			return nil, err
		}
		lines = append(lines, file...)
	}
	keys := make(map[string]string, len(lines))
	for _, l := range lines {
		k, p, ok := strings.Cut(l, "=")
		if !ok || k == "" || p == "" {
			return nil, errors.New("API keys are KEY=PRINCIPAL") // never echo the line: it holds a key
		}
		if _, dup := keys[k]; dup {
			return nil, fmt.Errorf("API key of %s given twice", p)
		}
		keys[k] = p
	}
	return keys, nil
}

// readLines reads the non-empty lines of a credentials file that are not # comments, trimmed.
func readLines(path, flagName string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	return lines, nil
}

// capabilityStore is st when it can keep capnweb capabilities for the replicas sharing it (the
// stores of this module can), else nil: revocations then stay in the process.
func capabilityStore(st store.Store) binding.CapabilityStore {
	cs, _ := st.(binding.CapabilityStore)
	return cs
}
