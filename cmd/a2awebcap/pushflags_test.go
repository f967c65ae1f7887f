package main

import (
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/push"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// serve's push flags reach the deliverer's guard: -push-allow opens, -push-deny closes (and
// wins), -push-nat64 judges a network-specific NAT64 prefix by the IPv4 address it embeds.
func TestPushFlags(t *testing.T) {
	t.Parallel()
	c, err := parseServe([]string{"-push-allow", "127.0.0.1, hooks.internal, 10.0.0.0/8",
		"-push-deny", "10.1.0.0/16,93.184.216.34", "-push-nat64", "2a00:1:2:3::/64"})
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	key, err := push.LoadKey(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	d := push.New(st, key, c.push.options(slog.Default()))
	t.Cleanup(func() { d.Close() })
	for url, ok := range map[string]bool{
		"http://127.0.0.1:9/hook":             true,
		"http://hooks.internal/hook":          true,
		"http://10.2.3.4/hook":                true,
		"http://10.1.2.3/hook":                false, // denied within an allowed network
		"http://93.184.216.34/hook":           false, // denied although public
		"http://[2a00:1:2:3:a:0:1:0]/hook":    true,  // NAT64 of 10.0.0.1, allowed
		"http://[2a00:1:2:3:a9:fea9:fe00:0]/": false, // NAT64 of 169.254.169.254
		"http://[2a00:1:2:3:8:808:800:0]/":    true,  // NAT64 of 8.8.8.8
		"http://[64:ff9b::a9fe:a9fe]/":        false,
	} {
		if err := d.CheckURL(t.Context(), url); (err == nil) != ok || (err != nil && !errors.Is(err, push.ErrBlocked)) {
			t.Errorf("CheckURL(%s) = %v; want allowed %v", url, err, ok)
		}
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"-push-deny", "hooks.internal"}},
		{[]string{"-push-nat64", "2a00:1::/33"}},
		{[]string{"-push-nat64", "10.0.0.0/8"}},
		{[]string{"-push-allow", "10.0.0.0/33"}},
	} {
		if _, err := parseServe(tc.args); err == nil || !strings.HasPrefix(err.Error(), tc.args[0]) {
			t.Errorf("parseServe(%q) = %v; want an error about %s", tc.args, err, tc.args[0])
		}
	}
	if p := netip.MustParsePrefix("2a00:1:2:3::/64"); len(c.push.nat64) != 1 || c.push.nat64[0] != p {
		t.Errorf("-push-nat64 gave %v, want [%s]", c.push.nat64, p)
	}
}

// serve -max-push-configs-per-task 2 -max-push-configs-per-principal 3: the third config of a
// task, and the fourth of a principal's unfinished tasks, are INVALID_PARAMS saying so; a
// token with CR/LF is refused; the list pages.
func TestServePushConfigLimits(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"-addr", addr, "-db", "memory", "-agent", "builtin",
		"-max-push-configs-per-task", "2", "-max-push-configs-per-principal", "3"})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := starter(t, cfg)()
	t.Cleanup(func() { stop(); <-done })
	c := sdkClient(t, addr)
	ask := func() a2a.TaskID {
		res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask"))})
		if err != nil {
			t.Fatal(err)
		}
		return res.(*a2a.Task).ID
	}
	create := func(task a2a.TaskID, id, token string) error {
		_, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task, ID: id, URL: "https://example.com/" + id, Token: token})
		return err
	}
	t1, t2 := ask(), ask()
	for _, id := range []string{"a", "b"} {
		if err := create(t1, id, "tok"); err != nil {
			t.Fatalf("config %s: %v", id, err)
		}
	}
	if err := create(t1, "c", ""); !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "per task") {
		t.Errorf("a third config of a task: %v; want INVALID_PARAMS about the per-task limit", err)
	}
	if err := create(t2, "a", "tok\r\nX-Evil: 1"); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("a token with CR/LF: %v; want INVALID_PARAMS", err)
	}
	if err := create(t2, "a", ""); err != nil {
		t.Fatal(err)
	}
	if err := create(t2, "b", ""); !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "per principal") {
		t.Errorf("a fourth config of the principal: %v; want INVALID_PARAMS about the per-principal limit", err)
	}
	if _, err := parseServe([]string{"-max-push-configs-per-task", "-1"}); err == nil {
		t.Error("-max-push-configs-per-task -1 was accepted")
	}
}

// The delivery bounds: defaults, 0 meaning no bound, and the environment's values, a bad one
// an error unless its own flag overrides it.
func TestPushDeliveryFlags(t *testing.T) {
	t.Setenv("A2AWEBCAP_PUSH_PER_PRINCIPAL", "3")
	t.Setenv("A2AWEBCAP_PUSH_WORKERS", "lots")
	if _, err := parseServe(nil); err == nil || !strings.Contains(err.Error(), "A2AWEBCAP_PUSH_WORKERS") {
		t.Errorf("a bad A2AWEBCAP_PUSH_WORKERS: %v; want an error naming it", err)
	}
	if _, err := parseServe([]string{"-push-per-destination", "2"}); err == nil {
		t.Error("another flag hid the bad A2AWEBCAP_PUSH_WORKERS")
	}
	c, err := parseServe([]string{"-push-workers", "16", "-push-per-destination", "0"})
	if err != nil {
		t.Fatal(err)
	}
	o := c.push.options(nil)
	if o.Workers != 16 || o.PerDestination >= 0 || o.PerPrincipal != 3 {
		t.Errorf("options = workers %d, per destination %d, per principal %d; want 16, no bound, 3", o.Workers, o.PerDestination, o.PerPrincipal)
	}
	if _, err := parseServe([]string{"-push-workers", "0"}); err == nil {
		t.Error("-push-workers 0 was accepted")
	}
	t.Setenv("A2AWEBCAP_PUSH_WORKERS", "")
	t.Setenv("A2AWEBCAP_PUSH_PER_PRINCIPAL", "")
	c, _ = parseServe(nil)
	if o := c.push.options(nil); o.Workers != push.DefaultWorkers || o.PerDestination != push.DefaultPerDestination || o.PerPrincipal != push.DefaultPerPrincipal {
		t.Errorf("default options = %d, %d, %d", o.Workers, o.PerDestination, o.PerPrincipal)
	}
}
