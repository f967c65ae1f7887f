package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fetch dials public addresses only; -fetch-networks lets it reach others, such as a site on
// this host, for the single agent and the agents of -agents alike.
func TestServeFetchNetworks(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("the page of " + r.URL.Path))
	}))
	t.Cleanup(site.Close)
	defs := t.TempDir()
	def := fmt.Sprintf(`{"name": "reader", "description": "Reads pages.", "policy": "none",
	  "rules": [
	    {"name": "read", "when": "source == \"user\" && command == \"read\"", "action": "call",
	     "params": {"tool": "\"fetch.get\"", "input": "\"%s/\" + args"}, "reason": "asked"},
	    {"name": "show", "when": "kind == \"tool-result\"", "action": "reply", "params": {"text": "text"}, "reason": "read"},
	    {"name": "refused", "when": "last.action == \"call\" && last.status != \"done\"", "action": "reply",
	     "params": {"text": "\"refused: \" + last.result"}, "reason": "failed"}],
	  "capabilities": {"offer": ["fetch"], "preinstall": ["fetch"], "strategies": {"fetch": "audit-only"},
	                   "fetch": {"allow": ["%s/*"]}}}`, site.URL, site.URL)
	if err := os.WriteFile(filepath.Join(defs, "reader.json"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "refused: "},
		{[]string{"-fetch-networks", "127.0.0.1/32"}, "the page of /tides"},
	} {
		addr := startServeWith(t, append([]string{"-agents", defs}, tc.args...)...)
		out, err := verb(t, "send", "http://"+addr+"/agents/reader", "read tides")
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("serve %v: read tides = %q, %v; want %q", tc.args, out, err, tc.want)
		}
	}
	if _, err := (&capabilityConfig{fetchNetworks: "localhost"}).fetchOptions(); err == nil {
		t.Error("-fetch-networks localhost: accepted, want a CIDR")
	}
}
