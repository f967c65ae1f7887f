package client_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// New picks capnweb first, and every binding can be forced (TestOperations forces each).
func TestBindingSelection(t *testing.T) {
	t.Parallel()
	srv := a2atest.Start(t, nil)
	noCapnweb := a2atest.Start(t, &a2atest.Options{HTTP: &binding.Options{CapnwebPath: "-"}})

	tests := []struct {
		name string
		srv  *a2atest.Server
		opts client.Options
		want client.Binding
	}{
		{"default is capnweb", srv, client.Options{}, client.BindingCapnweb},
		{"JSON-RPC when the card lists no capnweb", noCapnweb, client.Options{}, client.BindingJSONRPC},
		{"preferred transports reorder", srv, client.Options{Config: a2aclient.Config{
			PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolGRPC, a2a.TransportProtocolJSONRPC},
		}}, client.BindingGRPC},
		{"forced binding beats preferences", srv, client.Options{Binding: client.BindingREST, Config: a2aclient.Config{
			PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolGRPC},
		}}, client.BindingREST},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := client.New(t.Context(), tt.srv.URL, &tt.opts)
			if err != nil {
				t.Fatalf("client.New() = %v", err)
			}
			defer c.Destroy()
			if got := c.Binding(); got != tt.want {
				t.Errorf("Client.Binding() = %q, want %q", got, tt.want)
			}
			if got, want := c.Interface().ProtocolBinding, tt.want.Protocol(); got != want {
				t.Errorf("Client.Interface().ProtocolBinding = %q, want %q", got, want)
			}
			if _, err := c.SendMessage(t.Context(), userMessage("hello")); err != nil {
				t.Errorf("SendMessage() over %s = %v", tt.want, err)
			}
		})
	}

	t.Run("card URL", func(t *testing.T) {
		t.Parallel()
		c, err := client.New(t.Context(), srv.URL+binding.WellKnownCardPath, nil)
		if err != nil {
			t.Fatalf("client.New(card URL) = %v", err)
		}
		defer c.Destroy()
		if c.Card().Name != a2atest.Card().Name {
			t.Errorf("Client.Card().Name = %q", c.Card().Name)
		}
	})

	t.Run("unreachable capnweb falls through", func(t *testing.T) {
		t.Parallel()
		card, err := agentcard.NewResolver(nil).Resolve(t.Context(), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + ln.Addr().String() + binding.DefaultCapnwebPath
		ln.Close()
		for _, in := range card.SupportedInterfaces {
			if in.ProtocolBinding == client.ProtocolCapnweb {
				in.URL = dead
			}
		}
		c, err := client.NewFromCard(t.Context(), card, nil)
		if err != nil {
			t.Fatalf("client.NewFromCard() = %v", err)
		}
		defer c.Destroy()
		if got := c.Binding(); got != client.BindingJSONRPC {
			t.Errorf("Client.Binding() = %q, want jsonrpc after capnweb failed to dial", got)
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name string
			srv  *a2atest.Server
			b    client.Binding
			want string
		}{
			{"forced binding the card lacks", noCapnweb, client.BindingCapnweb, "no compatible transports"},
			{"unknown binding", srv, "carrier-pigeon", "unknown binding"},
		} {
			c, err := client.New(t.Context(), tt.srv.URL, &client.Options{Binding: tt.b})
			if err == nil {
				c.Destroy()
				t.Errorf("%s: client.New() succeeded", tt.name)
				continue
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: client.New() = %v, want it to say %q", tt.name, err, tt.want)
			}
		}
		if _, err := client.New(t.Context(), "ftp://example.com", nil); err == nil {
			t.Errorf("client.New(ftp URL) succeeded")
		}
	})
}

// a2a-go programs get capnweb from their usual factory with one option.
func TestWithCapnwebTransport(t *testing.T) {
	t.Parallel()
	srv := a2atest.Start(t, nil)
	card, err := agentcard.NewResolver(nil).Resolve(t.Context(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(t.Context(), card,
		client.WithCapnwebTransport(nil),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{client.ProtocolCapnweb}}))
	if err != nil {
		t.Fatalf("a2aclient.NewFromCard() = %v", err)
	}
	defer c.Destroy()
	res, err := c.SendMessage(t.Context(), userMessage("hello"))
	if err != nil {
		t.Fatalf("SendMessage() = %v", err)
	}
	if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: res.(*a2a.Task).ID}); err != nil {
		t.Errorf("GetTask() = %v", err)
	}
	if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "nope"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask(unknown) = %v, want ErrTaskNotFound", err)
	}
}

// Credentials travel on the WebSocket upgrade: without them a forced capnweb client cannot
// connect, and an unforced one falls through to the next binding.
func TestCredentialsOnUpgrade(t *testing.T) {
	t.Parallel()
	srv := fullServer(t)
	if c, err := client.New(t.Context(), srv.URL, &client.Options{Binding: client.BindingCapnweb}); err == nil {
		c.Destroy()
		t.Errorf("client.New(capnweb, no credentials) succeeded")
	}
	c := connect(t, srv, "", nil)
	if c.Binding() == client.BindingCapnweb {
		t.Errorf("Client.Binding() = capnweb without credentials, want a fall-through")
	}
}
