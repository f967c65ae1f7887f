package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// requestInfo is what Middleware keeps of the HTTP request for the schemes that need more
// than headers.
type requestInfo struct {
	tls   *tls.ConnectionState
	query url.Values
}

type requestInfoKey struct{}

// Middleware keeps the request's TLS state (for MTLS) and URL query (for API keys in the
// query) in its context, where the schemes find them: binding.Authenticator sees headers
// only. Wrap the handler of binding.NewHTTPHandler with it when those schemes are used.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := &requestInfo{tls: r.TLS, query: r.URL.Query()}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri)))
	})
}

func requestInfoFrom(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return ri
}

// tlsState is the TLS state of the connection a call came on: the HTTP request's (through
// Middleware) or the gRPC peer's.
func tlsState(ctx context.Context) *tls.ConnectionState {
	if ri := requestInfoFrom(ctx); ri != nil {
		return ri.tls
	}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			return &info.State
		}
	}
	return nil
}

// MTLSOptions configure an MTLS scheme. Nil means every default.
type MTLSOptions struct {
	// Roots, when set, are the CAs the scheme verifies client certificates against itself
	// (for a server whose tls.Config only requests them). Nil: the scheme accepts only chains
	// the TLS server verified (tls.Config.ClientAuth VerifyClientCertIfGiven or
	// RequireAndVerifyClientCert, with ClientCAs) and refuses unverified certificates.
	Roots *x509.CertPool
	// Principal names the principal of a verified leaf certificate. Nil: its first URI SAN
	// (a SPIFFE ID, say), else its first DNS SAN, else its first e-mail SAN, else its
	// subject's common name.
	Principal func(*x509.Certificate) (string, error)
}

// MTLS authenticates callers by their TLS client certificate. It needs Middleware on HTTP;
// on gRPC it reads the peer's TLS state.
type MTLS struct {
	name string
	opts MTLSOptions
}

// NewMTLS returns the client-certificate scheme called name.
func NewMTLS(name string, opts *MTLSOptions) *MTLS {
	s := &MTLS{name: name}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Principal == nil {
		s.opts.Principal = certPrincipal
	}
	return s
}

// Name implements Scheme.
func (s *MTLS) Name() string { return s.name }

func (s *MTLS) declaration() (a2a.SecurityScheme, []string) {
	return a2a.MutualTLSSecurityScheme{}, nil
}

// Authenticate implements Scheme.
func (s *MTLS) Authenticate(ctx context.Context, _ http.Header) (*a2asrv.User, error) {
	st := tlsState(ctx)
	if st == nil || len(st.PeerCertificates) == 0 {
		return nil, errAbsent
	}
	leaf := st.PeerCertificates[0]
	if s.opts.Roots != nil {
		inter := x509.NewCertPool()
		for _, c := range st.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: s.opts.Roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		if err != nil {
			return nil, unauthenticated("auth: client certificate not trusted", err)
		}
	} else if len(st.VerifiedChains) == 0 {
		return nil, unauthenticated("auth: client certificate not verified", nil)
	}
	p, err := s.opts.Principal(leaf)
	if err != nil || p == "" {
		return nil, unauthenticated("auth: client certificate names no principal", err)
	}
	return newUser(s, p, nil), nil
}

func certPrincipal(c *x509.Certificate) (string, error) {
	switch {
	case len(c.URIs) > 0:
		return c.URIs[0].String(), nil
	case len(c.DNSNames) > 0:
		return c.DNSNames[0], nil
	case len(c.EmailAddresses) > 0:
		return c.EmailAddresses[0], nil
	case c.Subject.CommonName != "":
		return c.Subject.CommonName, nil
	}
	return "", errors.New("auth: certificate without a name")
}
