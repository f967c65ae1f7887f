package main

// TLS for serve: certificate files, or a self-signed development certificate.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

type tlsConfig struct {
	cert, key  string
	selfSigned bool
	clientCA   string
}

func (t *tlsConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&t.cert, "tls-cert", envOr("A2AWEBCAP_TLS_CERT", ""), "serve HTTPS (and gRPC over TLS) with this PEM certificate `file` (chain); needs -tls-key (A2AWEBCAP_TLS_CERT)")
	fs.StringVar(&t.key, "tls-key", envOr("A2AWEBCAP_TLS_KEY", ""), "the PEM private key `file` of -tls-cert (A2AWEBCAP_TLS_KEY)")
	fs.BoolVar(&t.selfSigned, "tls-self-signed", false, "serve HTTPS with a self-signed certificate made at start for localhost, 127.0.0.1, ::1 and the -addr host: for development only (clients must skip verification or pin its fingerprint, which is logged)")
	fs.StringVar(&t.clientCA, "tls-client-ca", envOr("A2AWEBCAP_TLS_CLIENT_CA", ""), "ask clients for a certificate and verify it against the CAs in this PEM `file` (mutual TLS; a certificate stays optional unless the agent's authentication requires it) (A2AWEBCAP_TLS_CLIENT_CA)")
}

// config returns the server's TLS configuration, nil for plain HTTP, and the fingerprint of a
// self-signed certificate ("" otherwise).
func (t *tlsConfig) config(addr string) (*tls.Config, string, error) {
	switch {
	case t.selfSigned && (t.cert != "" || t.key != ""):
		return nil, "", errors.New("-tls-self-signed and -tls-cert/-tls-key exclude each other")
	case (t.cert == "") != (t.key == ""):
		return nil, "", errors.New("-tls-cert and -tls-key go together")
	case !t.selfSigned && t.cert == "":
		if t.clientCA != "" {
			return nil, "", errors.New("-tls-client-ca needs TLS: set -tls-cert and -tls-key, or -tls-self-signed")
		}
		return nil, "", nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	var fingerprint string
	if t.selfSigned {
		cert, err := selfSignedCert(addr)
		if err != nil {
			return nil, "", err
		}
		sum := sha256.Sum256(cert.Certificate[0])
		fingerprint = hex.EncodeToString(sum[:])
		cfg.Certificates = []tls.Certificate{cert}
	} else {
		cert, err := tls.LoadX509KeyPair(t.cert, t.key)
		if err != nil {
			return nil, "", fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if t.clientCA != "" {
		pem, err := os.ReadFile(t.clientCA)
		if err != nil {
			return nil, "", fmt.Errorf("-tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("-tls-client-ca: no PEM certificate in %s", t.clientCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, fingerprint, nil
}

// selfSignedCert makes a development certificate for localhost and the listen address's host.
func selfSignedCert(addr string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "a2awebcap development certificate"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		if ip := net.ParseIP(host); ip != nil {
			if !ip.IsLoopback() {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if host != "localhost" {
			tmpl.DNSNames = append(tmpl.DNSNames, host)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
