package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// DiscoveryPath is where an OpenID provider publishes its configuration, under its issuer URL.
const DiscoveryPath = "/.well-known/openid-configuration"

// NewOIDC returns a JWT scheme for the OpenID provider opts.Issuer: it fetches the provider's
// discovery document (OpenID Connect Discovery 1.0), checks that it names the same issuer (so
// one provider cannot pass itself off as another), and takes the key set from its jwks_uri.
// opts.JWKSURL must be empty. The card declares the scheme as OpenID Connect unless opts.Card
// says otherwise.
func NewOIDC(ctx context.Context, name string, opts *JWTOptions) (*JWT, error) {
	if opts == nil || opts.Issuer == "" {
		return nil, errors.New("auth: OIDC scheme needs an issuer")
	}
	if opts.JWKSURL != "" {
		return nil, errors.New("auth: OIDC discovers the key set URL; leave JWKSURL empty")
	}
	discovery := strings.TrimSuffix(opts.Issuer, "/") + DiscoveryPath
	if err := checkEndpoint(discovery); err != nil {
		return nil, err
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if _, err := getJSON(ctx, opts.HTTPClient, discovery, &doc); err != nil {
		return nil, fmt.Errorf("auth: OIDC discovery: %w", err)
	}
	if doc.Issuer != opts.Issuer {
		return nil, fmt.Errorf("auth: OIDC discovery at %s names issuer %q, want %q", discovery, doc.Issuer, opts.Issuer)
	}
	o := *opts
	o.JWKSURL = doc.JWKSURI
	if o.Card == nil {
		o.Card = a2a.OpenIDConnectSecurityScheme{OpenIDConnectURL: discovery}
	}
	return NewJWT(name, &o)
}
