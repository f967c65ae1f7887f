package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// serve -agents with a priced skill, writer paying researcher (docs/multi-agent.md, "Priced
// skills"): the researcher's definition prices research, the server's -x402-facilitator settles
// it; the writer's payer pays from each principal's budget of 15000 — alice's spending leaves
// bob's budget whole — and after a restart on the same -db file alice's budget is still spent.
func TestServeAgentsPaid(t *testing.T) {
	dir := t.TempDir()
	addr, gaddr := freeAddr(t), freeAddr(t)
	origin := "http://" + addr
	fac := x402.NewLocalFacilitator(&x402.LocalOptions{Assets: []x402.Asset{x402.USDCBaseSepolia}, Ledger: true})
	fsrv := httptest.NewServer(fac)
	t.Cleanup(fsrv.Close)
	var key *evm.PrivateKey
	var keyHex string
	for key == nil {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		keyHex = hex.EncodeToString(b)
		key, _ = evm.PrivateKeyFromBytes(b)
	}
	fac.Fund(x402.USDCBaseSepolia, key.Address(), big.NewInt(1_000_000))
	t.Setenv("PAID_TEST_WRITER_KEY", keyHex)
	t.Setenv("PAID_TEST_WRITER_API_KEY", "kw")
	const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	usdc := x402.USDCBaseSepolia.Address

	researcher := fmt.Sprintf(`{"name": "researcher", "policy": "none", "rules": [
	  {"name": "research", "description": "Research a topic", "when": "source == \"user\" && command == \"research\" && args != \"\"",
	   "action": "reply", "params": {"text": "\"researching \" + args"}, "reason": "asked"}],
	 "payments": {"payTo": %q, "prices": [{"skill": "research", "amount": "10000", "network": "base-sepolia", "asset": %q}]}}`, payTo, usdc)
	writer := fmt.Sprintf(`{"name": "writer", "policy": "none", "rules": [
	  {"name": "write", "when": "command == \"write\"", "action": "call",
	   "params": {"tool": "\"a2a.call\"", "input": "\"{\\\"agent\\\": \\\"%[1]s/agents/researcher/\\\", \\\"message\\\": \\\"research \" + args + \"\\\"}\""}, "reason": "delegate"},
	  {"name": "report", "when": "kind == \"tool-result\" && source == \"agent\"", "action": "reply", "params": {"text": "\"heard: \" + text"}, "reason": "say it"},
	  {"name": "trouble", "when": "last.action == \"call\" && last.status != \"done\"", "action": "reply", "params": {"text": "\"call \" + last.status + \": \" + last.result"}, "reason": "say it"}],
	 "capabilities": {"offer": ["a2a"], "preinstall": ["a2a"], "strategies": {"a2a": "audit-only"},
	  "a2a": {"allow": ["%[1]s/*"], "networks": ["127.0.0.1/32"],
	   "credentials": [{"prefix": "%[1]s/", "header": "X-API-Key", "env": "PAID_TEST_WRITER_API_KEY"}],
	   "payer": {"keyEnv": "PAID_TEST_WRITER_KEY", "budget": [{"network": "base-sepolia", "asset": %[2]q, "amount": "15000"}]}}}}`, origin, usdc)
	defsDir := filepath.Join(dir, "agents")
	if err := os.Mkdir(defsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, def := range map[string]string{"researcher.json": researcher, "writer.json": writer} {
		if err := os.WriteFile(filepath.Join(defsDir, name), []byte(def), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := parseServe([]string{"-addr", addr, "-grpc-addr", gaddr, "-base-url", origin, "-db", filepath.Join(dir, "a.db"), "-no-push",
		"-agents", defsDir, "-x402-facilitator", fsrv.URL, "-api-key", "ka=alice", "-api-key", "kb=bob", "-api-key", "kw=writer"})
	if err != nil {
		t.Fatal(err)
	}
	start := starter(t, cfg)
	stop, done := start()
	writerURL := origin + "/agents/writer"
	write := func(apiKey, topic string) string {
		t.Helper()
		out, err := verb(t, "send", writerURL, "-H", "X-API-Key: "+apiKey, "write", topic)
		if err != nil {
			t.Fatalf("write %s as %s: %v (%q)", topic, apiKey, err, out)
		}
		return out
	}
	paid := `"paid":{"amount":"10000"`
	if out := write("ka", "tides"); !strings.Contains(out, "researching tides") || !strings.Contains(out, paid) {
		t.Errorf("alice's write: %q, want the research, paid 10000", out)
	}
	if out := write("ka", "moons"); !strings.Contains(out, "over what remains of the budget") {
		t.Errorf("alice's second write: %q, want it refused: over her budget", out)
	}
	if out := write("kb", "tides"); !strings.Contains(out, "researching tides") || !strings.Contains(out, paid) {
		t.Errorf("bob's write: %q, want it paid from his own budget", out)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}

	stop, done = start()
	defer func() { stop(); <-done }()
	if out := write("ka", "stars"); !strings.Contains(out, "over what remains of the budget") {
		t.Errorf("alice's write after a restart: %q, want it refused: her budget stays spent", out)
	}
	if got := fac.Balance(x402.USDCBaseSepolia, evmAddress(t, payTo)); got.Int64() != 20000 {
		t.Errorf("the researcher's balance = %s, want 20000: alice's and bob's research", got)
	}
	if got := fac.Settled(); got != 2 {
		t.Errorf("facilitator settled %d payments, want 2", got)
	}
}

func evmAddress(t *testing.T, s string) evm.Address {
	t.Helper()
	a, err := evm.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
