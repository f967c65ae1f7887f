package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/a2awebcap/a2awebcap/netguard"
)

// names resolves host names from a table.
type names map[string][]netip.Addr

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := n[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

var resolver = names{
	"public.example":    addrs("93.184.216.34"),
	"loop.example":      addrs("127.0.0.1"),
	"mixed.example":     addrs("93.184.216.34", "10.1.2.3"),
	"nat64meta.example": addrs("64:ff9b::a9fe:a9fe"),
	"internal.example":  addrs("10.9.9.9"),
}

func TestGuardCheck(t *testing.T) {
	t.Parallel()
	// 2a00:1:2:3::/64 stands for a network-specific NAT64 prefix (RFC 6052): 10.0.0.1 under
	// it is 2a00:1:2:3:a:0:1:0 — bits 64 to 71 are skipped.
	nat64 := netguard.New(&netguard.Options{NAT64: prefixes("2a00:1:2:3::/64")})
	lists := netguard.New(&netguard.Options{
		Allow: prefixes("127.0.0.1/32", "10.0.0.0/8"),
		Deny:  prefixes("10.1.0.0/16", "93.184.216.0/24"),
	})
	tests := []struct {
		g    *netguard.Guard
		ip   string
		want bool
	}{
		{nat64, "2a00:1:2:3:a:0:1:0", false},            // embeds 10.0.0.1
		{nat64, "2a00:1:2:3:a9:fea9:fe00:0", false},     // embeds 169.254.169.254
		{nat64, "2a00:1:2:3:8:808:800:0", true},         // embeds 8.8.8.8
		{netguard.New(nil), "2a00:1:2:3:a:0:1:0", true}, // unknown prefix: looks public
		{lists, "127.0.0.1", true},
		{lists, "::ffff:127.0.0.1", true},
		{lists, "127.0.0.2", false},
		{lists, "10.2.3.4", true},
		{lists, "10.1.2.3", false}, // deny wins over allow
		{lists, "93.184.216.34", false},
		{lists, "64:ff9b::a01:203", false}, // embeds 10.1.2.3, denied
		{lists, "64:ff9b::a02:304", true},  // embeds 10.2.3.4, allowed
		{lists, "64:ff9b::7f00:1", true},   // embeds 127.0.0.1, allowed
		{lists, "::1", false},
	}
	for _, tc := range tests {
		err := tc.g.Check(netip.MustParseAddr(tc.ip))
		if (err == nil) != tc.want || (err != nil && !errors.Is(err, netguard.ErrBlocked)) {
			t.Errorf("Check(%s) = %v; want allowed %v", tc.ip, err, tc.want)
		}
	}
}

func TestNAT64PrefixLength(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"2a00:1::/33", "10.0.0.0/8", "2a00::/128"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(NAT64: %s) did not panic", p)
				}
			}()
			netguard.New(&netguard.Options{NAT64: prefixes(p)})
		}()
	}
}

// TestResolve: a name is refused when any of its addresses is, and the error does not say
// which address it resolved to; a literal is named.
func TestResolve(t *testing.T) {
	t.Parallel()
	g := netguard.New(&netguard.Options{Resolver: resolver, AllowHosts: []string{"Internal.Example."}})
	ctx := t.Context()
	if ips, err := g.Resolve(ctx, "public.example"); err != nil || len(ips) != 1 {
		t.Errorf("Resolve(public.example) = %v, %v", ips, err)
	}
	for _, h := range []string{"loop.example", "mixed.example", "nat64meta.example"} {
		_, err := g.Resolve(ctx, h)
		var be *netguard.BlockedError
		if !errors.As(err, &be) || be.Host != h || !be.Addr.IsValid() {
			t.Errorf("Resolve(%s) = %v; want a *BlockedError for the host", h, err)
			continue
		}
		if strings.Contains(err.Error(), be.Addr.String()) || strings.Contains(err.Error(), be.Addr.Unmap().String()) {
			t.Errorf("Resolve(%s) error %q names the address it resolved to", h, err)
		}
	}
	if _, err := g.Resolve(ctx, "[::1]"); err == nil || !strings.Contains(err.Error(), "::1") {
		t.Errorf("Resolve([::1]) = %v; want an error naming ::1", err)
	}
	if ips, err := g.Resolve(ctx, "internal.example"); err != nil || ips != nil {
		t.Errorf("Resolve(allow-listed internal.example) = %v, %v; want nil, nil", ips, err)
	}
	if _, err := g.Resolve(ctx, "nowhere.example"); err == nil || errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("Resolve(nowhere.example) = %v; want a resolution error, not ErrBlocked", err)
	}
}

func TestControl(t *testing.T) {
	t.Parallel()
	g := netguard.New(nil)
	for addr, ok := range map[string]bool{
		"93.184.216.34:443":           true,
		"[2606:4700:4700::1111]:443":  true,
		"127.0.0.1:80":                false,
		"[::ffff:169.254.169.254]:80": false,
		"[64:ff9b::a9fe:a9fe]:80":     false,
		"[2002:a9fe:a9fe::1]:80":      false,
		"[fe80::1%eth0]:80":           false,
		"not-an-address":              false,
	} {
		if err := g.Control("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("Control(%s) = %v; want allowed %v", addr, err, ok)
		}
	}
}

// TestDial: a real listener on loopback is refused unless allow-listed, by address and by a
// name that resolves to it; and refused by Control on a dialer of one's own.
func TestDial(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	strict := netguard.New(&netguard.Options{Resolver: resolver})
	allowing := netguard.New(&netguard.Options{Resolver: resolver, Allow: prefixes("127.0.0.1/32")})
	byName := netguard.New(&netguard.Options{Resolver: resolver, AllowHosts: []string{"localhost"}})
	for _, tc := range []struct {
		name string
		g    *netguard.Guard
		url  string
		ok   bool
	}{
		{"strict literal", strict, "http://127.0.0.1:" + port, false},
		{"strict name", strict, "http://loop.example:" + port, false},
		{"allowed literal", allowing, "http://127.0.0.1:" + port, true},
		{"allowed name", allowing, "http://loop.example:" + port, true},
		{"allow-listed host", byName, "http://localhost:" + port, true},
		{"allow-listed host, other name", byName, "http://loop.example:" + port, false},
	} {
		c := &http.Client{Transport: tc.g.Transport()}
		resp, err := c.Get(tc.url)
		if err == nil {
			resp.Body.Close()
		}
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, netguard.ErrBlocked)) {
			t.Errorf("%s: GET %s = %v; want ok %v (or ErrBlocked)", tc.name, tc.url, err, tc.ok)
		}
	}
	d := net.Dialer{Control: strict.Control}
	if c, err := d.DialContext(t.Context(), "tcp", srv.Listener.Addr().String()); err == nil {
		c.Close()
		t.Errorf("a dialer with Control connected to %s", srv.Listener.Addr())
	} else if !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("a dialer with Control: %v; want ErrBlocked", err)
	}
}
