package main

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/a2awebcap/a2awebcap/client"
)

// serve -tls-self-signed serves every binding over TLS: the card over HTTPS, capnweb over wss,
// JSON-RPC, REST and gRPC.
func TestServeTLS(t *testing.T) {
	addr, grpcAddr := freeAddr(t), freeAddr(t)
	cfg := serveConfig{addr: addr, grpcAddr: grpcAddr, db: "memory", agent: "builtin", drain: time.Second, noPush: true, tls: tlsConfig{selfSigned: true}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() { cancel(); <-done })

	insecure := &tls.Config{InsecureSkipVerify: true} // the development certificate is self-signed
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: insecure}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := hc.Get("https://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
				t.Fatal("healthz was not served over TLS")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve over TLS did not come up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP was served on the TLS port")
		}
	}
	for _, b := range []client.Binding{client.BindingCapnweb, client.BindingCapnwebBatch, client.BindingJSONRPC, client.BindingREST, client.BindingGRPC} {
		c, err := client.New(t.Context(), "https://"+addr, &client.Options{
			Binding:         b,
			HTTPClient:      hc,
			GRPCDialOptions: []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(insecure))},
		})
		if err != nil {
			t.Fatalf("client over %s: %v", b, err)
		}
		res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo over tls"))})
		if m, ok := res.(*a2a.Message); err != nil || !ok || text(m) != "over tls" {
			t.Errorf("SendMessage over %s with TLS = %v, %v", b, res, err)
		}
		_ = c.Destroy()
	}
}

func TestTLSFlags(t *testing.T) {
	for _, c := range []tlsConfig{
		{cert: "a.pem"},
		{key: "a.key"},
		{selfSigned: true, cert: "a.pem", key: "a.key"},
		{clientCA: "ca.pem"},
		{cert: "/no/such.pem", key: "/no/such.key"},
	} {
		if _, _, err := c.config("127.0.0.1:0"); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
