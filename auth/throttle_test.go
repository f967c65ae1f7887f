package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"golang.org/x/crypto/bcrypt"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// counted is a Scheme that counts the credentials of its kind it checks: the work the login
// throttle must bound (a bcrypt comparison, an introspection call).
type counted struct {
	Scheme
	n atomic.Int64
}

func (c *counted) Authenticate(ctx context.Context, h http.Header) (*a2asrv.User, error) {
	u, err := c.Scheme.Authenticate(ctx, h)
	if !errors.Is(err, errAbsent) {
		c.n.Add(1)
	}
	return u, err
}

// throttledServer runs a2atest's server with API keys, Basic (bcrypt) and introspection, under
// one LoginThrottle for HTTP and gRPC (budget 10 per address, Claimed principals, refilled
// hourly: no refill within the test).
func throttledServer(t *testing.T) (srv *a2atest.Server, keys, basic, intro *counted, endpoint *introspector) {
	t.Helper()
	k, err := NewAPIKey("apiKey", a2a.APIKeySecurityScheme{Location: "header", Name: "X-API-Key"}, map[string]string{"k-carol": "carol"})
	if err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("alice-pass"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBasic("basic", map[string]string{"alice": string(hash)})
	if err != nil {
		t.Fatal(err)
	}
	endpoint = newIntrospector(t, map[string]map[string]any{"good": {"active": true, "sub": "bob"}})
	in, err := NewIntrospection("opaque", &IntrospectionOptions{URL: endpoint.srv.URL, ClientID: "rs", ClientSecret: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	keys, basic, intro = &counted{Scheme: k}, &counted{Scheme: b}, &counted{Scheme: in}
	authn := Any(keys, basic, intro)
	// (No Delay: these tests count attempts; BenchmarkLoginFlood and the binding's tests show
	// what it does.)
	throttle := &binding.LoginThrottle{PerAddress: 10, Interval: time.Hour, Claimed: Claimed, Delay: -1}
	srv = a2atest.Start(t, &a2atest.Options{
		HTTP: &binding.Options{Authenticate: authn, LoginThrottle: throttle},
		GRPC: &binding.GRPCOptions{Authenticate: authn, LoginThrottle: throttle},
	})
	return srv, keys, basic, intro, endpoint
}

// throttled reports whether err is the login throttle's refusal, as each binding's client
// reports it (a2a-go's JSON-RPC client reports only the HTTP status).
func throttled(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "too many failed authentications") || strings.Contains(err.Error(), "429 Too Many Requests"))
}

// isUnauthenticated reports whether err is a refusal of the credentials, as each binding's
// client reports it.
func isUnauthenticated(err error) bool {
	return errors.Is(err, a2a.ErrUnauthenticated) || capnwebReason(err) == "UNAUTHENTICATED" ||
		err != nil && strings.Contains(err.Error(), "401 Unauthorized")
}

// 300 wrong API keys from one address: 10 are checked and refused (401), the other 290 are
// refused before any check (429 with Retry-After), on every binding — a WebSocket upgrade, a
// batch and capnweb's authenticate() included — and a caller with a good key is not held back.
func TestLoginThrottleEveryBinding(t *testing.T) {
	t.Parallel()
	for _, b := range []client.Binding{client.BindingJSONRPC, client.BindingREST, client.BindingGRPC, client.BindingCapnweb, client.BindingCapnwebBatch, "capnweb-authenticate"} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			srv, keys, _, _, _ := throttledServer(t)
			ctx := t.Context()
			wrong := http.Header{"X-API-Key": {"wrong"}}
			var attempt func(i int) error
			switch b {
			case client.BindingCapnweb: // a connection per attempt: each upgrade authenticates
				attempt = func(int) error {
					c, err := client.New(ctx, srv.URL, &client.Options{Binding: b, Header: wrong})
					if err != nil {
						return err
					}
					defer c.Destroy()
					_, err = c.ListTasks(ctx, &a2a.ListTasksRequest{})
					return err
				}
			case "capnweb-authenticate": // one connection, authenticate() again and again
				s, err := capnweb.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+binding.DefaultCapnwebPath, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				attempt = func(int) error {
					// Released at once, not when the GC finds them: a connection that has not
					// authenticated may hold only 64 exports of the server's.
					session := s.Main().Call("authenticate", map[string]any{"X-API-Key": "wrong"})
					defer session.Release()
					tasks := session.Call("listTasks", map[string]any{})
					defer tasks.Release()
					_, err := tasks.Await(ctx)
					if capnwebReason(err) == "LOGIN_THROTTLED" {
						return errors.New("too many failed authentications")
					}
					return err
				}
			default:
				c, err := client.New(ctx, srv.URL, &client.Options{Binding: b, Header: wrong})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Destroy() })
				attempt = func(int) error { _, err := c.ListTasks(ctx, &a2a.ListTasksRequest{}); return err }
			}
			var refused, limited int
			for i := range 300 {
				switch err := attempt(i); {
				case throttled(err):
					limited++
				case isUnauthenticated(err):
					refused++
				default:
					t.Fatalf("attempt %d: %v", i, err)
				}
			}
			if refused != 10 || limited != 290 || keys.n.Load() != 10 {
				t.Errorf("300 wrong keys: %d refused, %d throttled, %d checked; want 10, 290, 10", refused, limited, keys.n.Load())
			}
			// A good key from another address is not held back (a2atest listens on 127.0.0.1;
			// connections may leave from any address of 127.0.0.0/8).
			good := http.Header{"X-API-Key": {"k-carol"}}
			c, err := client.New(ctx, srv.URL, &client.Options{Binding: client.BindingJSONRPC, Header: good, HTTPClient: fromAddr("127.0.0.2")})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Destroy()
			if _, err := c.ListTasks(ctx, &a2a.ListTasksRequest{}); err != nil {
				t.Errorf("a good key from another address: %v", err)
			}
		})
	}
}

// fromAddr is an HTTP client whose connections leave from the local address ip.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// 1,000 made-up bearer tokens from one address cost at most the address's budget in calls to
// the introspection endpoint; a token refused once is not asked about again for a while.
func TestLoginThrottleIntrospection(t *testing.T) {
	t.Parallel()
	srv, _, _, intro, endpoint := throttledServer(t)
	ctx := t.Context()
	for i := range 1000 {
		c, err := client.New(ctx, srv.URL, &client.Options{Binding: client.BindingJSONRPC, Header: bearerHeader(fmt.Sprintf("made-up-%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListTasks(ctx, &a2a.ListTasksRequest{})
		c.Destroy()
		if err == nil {
			t.Fatalf("made-up token %d was accepted", i)
		}
	}
	if n := endpoint.calls.Load(); n > 10 || intro.n.Load() > 10 {
		t.Errorf("1000 made-up tokens: %d introspection calls (%d checks), want at most 10", n, intro.n.Load())
	}

	// The refusal of a token is remembered: asking again about it does not call the endpoint.
	in, err := NewIntrospection("opaque", &IntrospectionOptions{URL: endpoint.srv.URL, ClientID: "rs", ClientSecret: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	before := endpoint.calls.Load()
	for range 5 {
		if _, err := in.Authenticate(ctx, bearerHeader("revoked")); !errors.Is(err, a2a.ErrUnauthenticated) {
			t.Fatalf("revoked token: %v", err)
		}
	}
	if n := endpoint.calls.Load() - before; n != 1 {
		t.Errorf("5 checks of one refused token called the endpoint %d times, want 1", n)
	}
}

// Eight clients guessing Basic passwords at once from one address: the bcrypt comparisons
// stay within the address's budget however fast they try, and a caller elsewhere is served
// throughout. (BenchmarkLoginFlood measures that caller's latency.)
func TestLoginThrottleBasicFlood(t *testing.T) {
	t.Parallel()
	srv, _, basic, _, _ := throttledServer(t)
	ctx := t.Context()
	var wg sync.WaitGroup
	var guesses atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			c, err := client.New(ctx, srv.URL, &client.Options{Binding: client.BindingJSONRPC, Header: basicHeader("alice", "guess")})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Destroy()
			for i := range 50 {
				_, err := c.ListTasks(ctx, &a2a.ListTasksRequest{})
				if err == nil {
					t.Errorf("guesser %d, guess %d was accepted", g, i)
					return
				}
				guesses.Add(1)
			}
		})
	}
	legit, err := client.New(ctx, srv.URL, &client.Options{Binding: client.BindingJSONRPC, Header: basicHeader("alice", "alice-pass"), HTTPClient: fromAddr("127.0.0.3")})
	if err != nil {
		t.Fatal(err)
	}
	defer legit.Destroy()
	for i := range 20 {
		if _, err := legit.ListTasks(ctx, &a2a.ListTasksRequest{}); err != nil {
			t.Errorf("alice's own call %d during the flood: %v", i, err)
		}
	}
	wg.Wait()
	// 400 guesses; at most 10 reached bcrypt (plus alice's own 20 logins).
	if n := basic.n.Load(); guesses.Load() != 400 || n > 10+20 {
		t.Errorf("%d guesses made %d bcrypt comparisons (alice's 20 included), want at most 30", guesses.Load(), n)
	}
}

func basicHeader(user, pass string) http.Header {
	r := http.Request{Header: http.Header{}}
	r.SetBasicAuth(user, pass)
	return r.Header
}

// Claimed reads the claimed principal without checking anything.
func TestClaimed(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	for _, c := range []struct {
		h    http.Header
		want string
	}{
		{basicHeader("alice", "x"), "alice"},
		{bearerHeader(iss.mint(t, iss.claims("bob"), nil)), "bob"},
		{bearerHeader(tamper(iss.mint(t, iss.claims("bob"), nil))), "bob"},
		{bearerHeader("opaque"), ""},
		{bearerHeader("a.!!!.c"), ""},
		{bearerHeader("a." + strings.Repeat("A", 20000) + ".c"), ""},
		{http.Header{"X-Api-Key": {"k"}}, ""},
		{http.Header{}, ""},
	} {
		if got := Claimed(c.h); got != c.want {
			t.Errorf("Claimed(%.60v) = %q, want %q", c.h, got, c.want)
		}
	}
}
