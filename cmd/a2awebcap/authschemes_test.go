package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"
)

// serve with -basic-users-file, -introspect-url and -tls-client-ca: each scheme is declared on
// the card as it is enforced, accepts its own credentials, refuses bad ones, and a 401
// challenges with the declared schemes.
func TestServeBasicIntrospectionMTLS(t *testing.T) {
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("# people\nann:"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The authorization server: "good" is active for sub svc, anything else is not.
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "agent" || secret != "agent-secret" {
			http.Error(w, "client authentication", http.StatusUnauthorized)
			return
		}
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("token") != "good" {
			_, _ = io.WriteString(w, `{"active":false}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "sub": "svc", "exp": time.Now().Add(time.Hour).Unix()})
	}))
	t.Cleanup(as.Close)
	t.Setenv("A2AWEBCAP_INTROSPECT_CLIENT_ID", "agent")
	t.Setenv("A2AWEBCAP_INTROSPECT_CLIENT_SECRET", "agent-secret")

	caFile, clientCert := testClientCA(t, dir)
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"-addr", addr, "-db", "memory", "-no-push", "-tls-self-signed",
		"-tls-client-ca", caFile, "-basic-users-file", users, "-introspect-url", as.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() { cancel(); <-done })

	base := &tls.Config{InsecureSkipVerify: true} // the development certificate is self-signed
	withCert := base.Clone()
	withCert.Certificates = []tls.Certificate{clientCert}
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: base}}
	mtls := &http.Client{Transport: &http.Transport{TLSClientConfig: withCert}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := anon.Get("https://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	card := fetchCard(t, anon, "https://"+addr)
	wantSchemes := a2a.NamedSecuritySchemes{
		"introspection": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"},
		"basic":         a2a.HTTPAuthSecurityScheme{Scheme: "Basic"},
		"mtls":          a2a.MutualTLSSecurityScheme{},
	}
	if diff := cmp.Diff(wantSchemes, card.SecuritySchemes); diff != "" {
		t.Errorf("card securitySchemes (-want +got):\n%s", diff)
	}
	wantReqs := a2a.SecurityRequirementsOptions{{"introspection": {}}, {"basic": {}}, {"mtls": {}}}
	if diff := cmp.Diff(wantReqs, card.SecurityRequirements); diff != "" {
		t.Errorf("card securityRequirements (-want +got):\n%s", diff)
	}

	realm := `realm="` + card.Name + `"`
	for _, tt := range []struct {
		name      string
		client    *http.Client
		authz     string
		want      int
		challenge []string
	}{
		{"no credentials", anon, "", 401, []string{"Bearer " + realm, "Basic " + realm + `, charset="UTF-8"`}},
		{"basic", anon, "Basic " + b64("ann:s3cret"), 200, nil},
		{"basic, wrong password", anon, "Basic " + b64("ann:guess"), 401, []string{"Bearer " + realm, "Basic " + realm + `, charset="UTF-8"`}},
		{"introspected token", anon, "Bearer good", 200, nil},
		{"inactive token", anon, "Bearer revoked", 401, []string{"Bearer " + realm + `, error="invalid_token"`, "Basic " + realm + `, charset="UTF-8"`}},
		{"client certificate", mtls, "", 200, nil},
	} {
		header := http.Header{}
		if tt.authz != "" {
			header.Set("Authorization", tt.authz)
		}
		resp := listTasks(t, tt.client, "https://"+addr, header)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: HTTP %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
		if diff := cmp.Diff(tt.challenge, resp.Header.Values("WWW-Authenticate")); diff != "" {
			t.Errorf("%s: WWW-Authenticate (-want +got):\n%s", tt.name, diff)
		}
	}
}

func b64(s string) string {
	r := &http.Request{Header: http.Header{}}
	user, pass, _ := strings.Cut(s, ":")
	r.SetBasicAuth(user, pass)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

// testClientCA writes a CA certificate to dir and returns its file and a client certificate
// it signed, for spiffe://test/client.
func testClientCA(t *testing.T, dir string) (string, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test client CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	file := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spiffe, _ := url.Parse("spiffe://test/client")
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "client"}, URIs: []*url.URL{spiffe},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return file, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
