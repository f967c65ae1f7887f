package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// testCA issues client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// client issues a client certificate for the SPIFFE ID id.
func (ca *testCA) client(t *testing.T, id string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(id)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "ignored"}, URIs: []*url.URL{u},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestMTLS(t *testing.T) {
	t.Parallel()
	ca, rogue := newTestCA(t, "client CA"), newTestCA(t, "rogue CA")
	alice := ca.client(t, "spiffe://example.org/alice")
	mallory := rogue.client(t, "spiffe://example.org/alice")
	tests := []struct {
		name       string
		clientAuth tls.ClientAuthType
		opts       *MTLSOptions
		cert       *tls.Certificate
		want       string
	}{
		{name: "verified by the server", clientAuth: tls.VerifyClientCertIfGiven, cert: &alice, want: "200 spiffe://example.org/alice"},
		{name: "no certificate", clientAuth: tls.VerifyClientCertIfGiven, want: "401 auth: credentials required"},
		{name: "requested, not verified", clientAuth: tls.RequestClientCert, cert: &alice, want: "401 auth: client certificate not verified"},
		{name: "verified by the scheme", clientAuth: tls.RequestClientCert, opts: &MTLSOptions{Roots: ca.pool}, cert: &alice, want: "200 spiffe://example.org/alice"},
		{name: "rogue CA, scheme verifies", clientAuth: tls.RequestClientCert, opts: &MTLSOptions{Roots: ca.pool}, cert: &mallory, want: "401 auth: client certificate not trusted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			auth := Any(NewMTLS("mtls", tt.opts))
			srv := httptest.NewUnstartedServer(Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, err := auth(r.Context(), r.Header)
				if err != nil {
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = io.WriteString(w, err.Error())
					return
				}
				_, _ = io.WriteString(w, u.Name)
			})))
			srv.TLS = &tls.Config{ClientAuth: tt.clientAuth, ClientCAs: ca.pool}
			srv.StartTLS()
			t.Cleanup(srv.Close)
			c := srv.Client()
			tr := c.Transport.(*http.Transport).Clone()
			if tt.cert != nil {
				// Always send it, even when the server's acceptable CAs do not include its issuer.
				tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return tt.cert, nil }
			}
			c = &http.Client{Transport: tr}
			t.Cleanup(tr.CloseIdleConnections)
			resp, err := c.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if got := resp.Status[:3] + " " + string(body); got != tt.want {
				t.Errorf("GET = %q, want %q", got, tt.want)
			}
		})
	}
}

// On gRPC the scheme reads the peer's TLS state.
func TestMTLSGRPCPeer(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "client CA")
	cert := ca.client(t, "spiffe://example.org/bob")
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	state := tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, VerifiedChains: [][]*x509.Certificate{{leaf, ca.cert}}}
	ctx := peer.NewContext(t.Context(), &peer.Peer{AuthInfo: credentials.TLSInfo{State: state}})
	check(t, ctx, NewMTLS("mtls", nil), nil, "spiffe://example.org/bob", nil)
	check(t, t.Context(), NewMTLS("mtls", nil), nil, "", errAbsent)
}
