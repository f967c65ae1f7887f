package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2awebcap/a2awebcap/netguard"
)

// allowOnly is a stand-in for the SSRF guard: it dials only the given addresses. (The real
// guard refuses every loopback address, which is where test servers live.)
func allowOnly(addrs ...string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		for _, a := range addrs {
			if a == addr {
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
		}
		return nil, fmt.Errorf("guard: address not allowed: %s", addr)
	}
}

func TestFetch(t *testing.T) {
	t.Parallel()
	var hits, otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHits.Add(1) }))
	defer other.Close()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/allowed/hello":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Set-Cookie", "secret=1")
			fmt.Fprintf(w, "hello %s", r.Header.Get("Accept-Language"))
		case "/allowed/big":
			w.Write([]byte(strings.Repeat("x", 100)))
		case "/allowed/to-outside":
			http.Redirect(w, r, "/private/x", http.StatusFound)
		case "/allowed/to-inside":
			http.Redirect(w, r, "/allowed/hello", http.StatusFound)
		case "/allowed/to-internal":
			http.Redirect(w, r, other.URL+"/allowed/x", http.StatusFound)
		case "/allowed/loop":
			http.Redirect(w, r, "/allowed/loop", http.StatusFound)
		default:
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	c, err := Fetch(Contract{Network: []string{"http://127.0.0.1:*/allowed/*"}},
		&FetchOptions{Dial: allowOnly(srv.Listener.Addr().String()), MaxBody: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Revoke(nil)
	s := NewSet(&SetOptions{Principal: "alice"})
	defer s.Close()
	if err := s.Install(t.Context(), c, Grant{Strategy: Strategy{Kind: PreApproved}}); err != nil {
		t.Fatal(err)
	}
	get := func(method string, args any) (map[string]any, error) {
		raw, _ := json.Marshal(args)
		out, err := s.Call(t.Context(), Request{Capability: "fetch", Method: method, Args: raw})
		if err != nil {
			return nil, err
		}
		var m map[string]any
		return m, json.Unmarshal(out, &m)
	}
	got, err := get("get", map[string]any{"url": srv.URL + "/allowed/hello", "headers": map[string]string{"accept-language": "fr"}})
	if err != nil || got["status"] != 200.0 || got["body"] != "hello fr" || got["truncated"] != false {
		t.Fatalf("get = %v, %v", got, err)
	}
	if h := got["headers"].(map[string]any); h["content-type"] != "text/plain" || h["set-cookie"] != nil {
		t.Errorf("headers = %v", h)
	}
	if got, err = get("get", map[string]any{"url": srv.URL + "/allowed/to-inside"}); err != nil || got["url"] != srv.URL+"/allowed/hello" {
		t.Errorf("a redirect inside the contract = %v, %v", got, err)
	}
	if got, err = get("get", map[string]any{"url": srv.URL + "/allowed/big"}); err != nil || got["body"] != "xxxxxxxxxx" || got["truncated"] != true {
		t.Errorf("a long body = %v, %v", got, err)
	}
	if got, err = get("head", map[string]any{"url": srv.URL + "/allowed/hello"}); err != nil || got["status"] != 200.0 {
		t.Errorf("head = %v, %v", got, err)
	}

	before := hits.Load()
	refused := []struct {
		args any
		err  error
	}{
		{map[string]any{"url": srv.URL + "/private/x"}, ErrOutsideContract},
		{map[string]any{"url": srv.URL + "/allowed/../private/x"}, ErrOutsideContract},
		{map[string]any{"url": strings.Replace(srv.URL, "http://", "http://user:pw@", 1) + "/allowed/x"}, ErrBadArgs},
		{map[string]any{"url": "ftp://127.0.0.1/allowed/x"}, ErrBadArgs},
		{map[string]any{"url": "/allowed/x"}, ErrBadArgs},
		{map[string]any{"url": srv.URL + "/allowed/x", "headers": map[string]string{"host": "internal"}}, ErrBadArgs},
	}
	for _, r := range refused {
		if _, err := get("get", r.args); !errors.Is(err, r.err) {
			t.Errorf("get %v = %v, want %v", r.args, err, r.err)
		}
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("%d refused requests reached the server", n)
	}
	// A redirect out of the contract is refused before it is followed, and recorded.
	if _, err := get("get", map[string]any{"url": srv.URL + "/allowed/to-outside"}); !errors.Is(err, ErrOutsideContract) {
		t.Errorf("a redirect outside the contract = %v, want ErrOutsideContract", err)
	}
	recs, _ := s.Audit(t.Context(), AuditQuery{})
	if last := recs[len(recs)-1]; last.Outcome != OutcomeRefused || !strings.Contains(strings.Join(last.Accessed, " "), "/private/x (refused)") {
		t.Errorf("the record = %+v", last)
	}
	// A redirect to an address the guard refuses (here: another local server, as an internal
	// service would be) is refused at dial time, though the contract allows its URL.
	if _, err := get("get", map[string]any{"url": srv.URL + "/allowed/to-internal"}); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("a redirect to a refused address = %v", err)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the internal server got %d requests", n)
	}
	if _, err := get("get", map[string]any{"url": srv.URL + "/allowed/loop"}); err == nil || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("a redirect loop = %v", err)
	}
	if after := hits.Load() - before; after > 1+1+6+1 {
		t.Errorf("%d requests for 4 calls", after)
	}
}

// Without a dialer of its own, fetch dials through netguard: the contract may allow a URL, the
// guard still refuses an address that is not public — loopback, the cloud metadata service,
// and that service behind an IPv6 form that embeds it — and each refusal is recorded, under
// any strategy.
func TestFetchRefusesSSRFTargets(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c, err := Fetch(Contract{Network: []string{"http://*:*/*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Revoke(nil)
	s := NewSet(&SetOptions{Principal: "alice"})
	defer s.Close()
	if err := s.Install(t.Context(), c, Grant{Strategy: Strategy{Kind: PreApproved}}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{srv.URL + "/", "http://169.254.169.254/latest/meta-data/", "http://[64:ff9b::a9fe:a9fe]/", "http://[::ffff:127.0.0.1]:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:] + "/", "http://10.0.0.1/"} {
		_, err := s.Call(t.Context(), Request{Capability: "fetch", Method: "get", Args: json.RawMessage(`{"url":"` + u + `"}`)})
		if !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("get %s = %v, want netguard.ErrBlocked", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server got %d requests", n)
	}
	recs, _ := s.Audit(t.Context(), AuditQuery{})
	if n := len(recs); n != 6 || recs[1].Outcome != OutcomeRefused || !strings.Contains(recs[1].Error, "127.0.0.1 is not a public address") {
		t.Errorf("%d records: %+v", n, recs)
	}
}
