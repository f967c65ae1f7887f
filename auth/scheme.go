package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/binding"
)

// Scheme is one configured security scheme: it checks the credentials of its kind and declares
// itself on the agent card. The constructors of this package make them; Any combines them and
// Declare puts them on the card.
type Scheme interface {
	// Name is the scheme's key in the card's SecuritySchemes.
	Name() string
	// Authenticate names the principal of a request from its headers (and, through Middleware,
	// its TLS state and URL). A request without credentials of this kind is errAbsent.
	Authenticate(ctx context.Context, headers http.Header) (*a2asrv.User, error)
	// declaration is the card entry and the scopes a caller must hold.
	declaration() (a2a.SecurityScheme, []string)
}

// Attribute keys of the User.Attributes this package fills.
const (
	// AttrScheme is the name of the Scheme that authenticated the caller (string).
	AttrScheme = "scheme"
	// AttrScopes are the caller's OAuth scopes ([]string), for bearer tokens.
	AttrScopes = "scopes"
	// AttrIssuer is the token's issuer (string), for bearer tokens.
	AttrIssuer = "issuer"
	// AttrExpires is when the credential expires (time.Time), for bearer tokens that say. The
	// capnweb binding ends a session's rights then: its calls fail with UNAUTHENTICATED.
	AttrExpires = "exp"
)

// errAbsent is a Scheme's answer when the request carries no credentials of its kind: Any
// then asks the next scheme. Any's refusal of a request with no credentials at all wraps it,
// and it wraps binding.ErrNoCredentials, so a binding.LoginThrottle does not count that refusal
// as a failed login.
var errAbsent = fmt.Errorf("auth: no credentials of this scheme: %w", binding.ErrNoCredentials)

// failure is a refusal: Error is the text for the wire (the binding sends it to the caller),
// and it unwraps to the A2A sentinel and to the cause, which stays off the wire.
type failure struct {
	wire  *a2a.Error
	cause error
}

func (f *failure) Error() string   { return f.wire.Message }
func (f *failure) Unwrap() []error { return []error{f.wire, f.cause} }

// unauthenticated is a refusal of the credentials: 401.
func unauthenticated(msg string, cause error) error {
	return &failure{wire: a2a.NewError(a2a.ErrUnauthenticated, msg), cause: cause}
}

// unauthorized is a refusal of an identified principal: 403.
func unauthorized(msg string, cause error) error {
	return &failure{wire: a2a.NewError(a2a.ErrUnauthorized, msg), cause: cause}
}

// Any authenticates with the first scheme that finds credentials of its kind in the request.
// Invalid credentials are refused, never passed on to the next scheme; a request with no
// credentials for any scheme is UNAUTHENTICATED. Put the same schemes on the card with Declare.
func Any(schemes ...Scheme) binding.Authenticator {
	schemes = append([]Scheme(nil), schemes...)
	return func(ctx context.Context, headers http.Header) (*a2asrv.User, error) {
		for _, s := range schemes {
			u, err := s.Authenticate(ctx, headers)
			if errors.Is(err, errAbsent) {
				continue
			}
			return u, err
		}
		return nil, unauthenticated("auth: credentials required", errAbsent)
	}
}

// Declare sets card.SecuritySchemes and card.SecurityRequirements to what Any(schemes...)
// enforces: each scheme, any one of them sufficing, with the scopes it requires. It replaces
// whatever the card declared before.
func Declare(card *a2a.AgentCard, schemes ...Scheme) {
	card.SecuritySchemes = nil
	card.SecurityRequirements = nil
	if len(schemes) == 0 {
		return
	}
	card.SecuritySchemes = make(a2a.NamedSecuritySchemes, len(schemes))
	for _, s := range schemes {
		decl, scopes := s.declaration()
		name := a2a.SecuritySchemeName(s.Name())
		card.SecuritySchemes[name] = decl
		card.SecurityRequirements = append(card.SecurityRequirements,
			a2a.SecurityRequirements{name: append(a2a.SecuritySchemeScopes{}, scopes...)})
	}
}

// newUser is the authenticated user of scheme s.
func newUser(s Scheme, principal string, attrs map[string]any) *a2asrv.User {
	if attrs == nil {
		attrs = map[string]any{}
	}
	attrs[AttrScheme] = s.Name()
	return a2asrv.NewAuthenticatedUser(principal, attrs)
}
