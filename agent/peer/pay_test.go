package peer_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agent/peer"
	"github.com/a2awebcap/a2awebcap/agent/sqlitestore"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// priced serves the test agent behind an x402 merchant: a message starting "research" costs
// 10000 of USDC on base-sepolia, paid through a local facilitator.
func priced(t *testing.T) *a2atest.Server {
	t.Helper()
	fac := httptest.NewServer(x402.NewLocalFacilitator(nil))
	t.Cleanup(fac.Close)
	mk, err := evm.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	m := x402.NewMerchant(a2atest.NewAgent(), &x402.MerchantOptions{
		Price: func(_ context.Context, ec *a2asrv.ExecutorContext) ([]x402.Requirements, error) {
			if strings.HasPrefix(ec.Message.Parts[0].Text(), "research") {
				return []x402.Requirements{x402.Exact(x402.USDCBaseSepolia, mk.Address().Hex(), "10000", "research")}, nil
			}
			return nil, nil
		},
		Facilitator: x402.NewFacilitatorClient(fac.URL, nil),
	})
	card := a2atest.Card()
	m.Declare(card, false)
	return a2atest.Start(t, &a2atest.Options{Executor: m, Card: card})
}

func payerKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	if _, err := evm.PrivateKeyFromBytes(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// paying are settings that may call allow and pay from a budget of 15000 of USDC on
// base-sepolia per principal, with the environment that holds the payer's key.
func paying(t *testing.T, allow []string) (peer.Settings, func(string) string) {
	t.Helper()
	key := payerKey(t)
	s := peer.Settings{Allow: allow, Networks: []string{"127.0.0.1/32"}, Payer: &peer.PayerSettings{KeyEnv: "PAY_KEY",
		Budget: []peer.PayLimit{{Network: "base-sepolia", Asset: x402.USDCBaseSepolia.Address, Amount: "15000"}}}}
	return s, func(k string) string {
		if k == "PAY_KEY" {
			return key
		}
		return ""
	}
}

// A callee that asks for payment is paid within the principal's budget, and the result says
// what was paid, with the callee's receipt; over budget, or without a payer, the call fails
// with the callee's requirements.
func TestPayer(t *testing.T) {
	t.Parallel()
	callee := priced(t)
	allow := []string{callee.URL, "http://" + callee.GRPCAddr}
	s, getenv := paying(t, allow)
	srv, _ := startCallerWith(t, s, callerRules(callee.URL), &peer.Options{Getenv: getenv})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	alice, bob := dial(t, srv.URL, "ta"), dial(t, srv.URL, "tb")
	st, text := final(events(t, ctx, alice, "ask research alexandria", ""))
	if !strings.Contains(text, `"paid":{"amount":"10000"`) || !strings.Contains(text, `"success":true`) || !strings.Contains(text, "(completed)") {
		t.Errorf("paid call: %s %q, want completed, paid 10000 with a receipt", st, text)
	}
	_, text = final(events(t, ctx, alice, "ask research again", ""))
	if !strings.Contains(text, "over what remains of the budget") || !strings.Contains(text, `"maxAmountRequired":"10000"`) {
		t.Errorf("second call over alice's budget: %q, want it refused with the requirements", text)
	}
	// bob's budget is his own.
	_, text = final(events(t, ctx, bob, "ask research bob", ""))
	if !strings.Contains(text, `"paid":{"amount":"10000"`) {
		t.Errorf("bob's call: %q, want it paid from his own budget", text)
	}

	srv2, _ := startCaller(t, peer.Settings{Allow: allow, Networks: []string{"127.0.0.1/32"}}, callerRules(callee.URL))
	_, text = final(events(t, ctx, dial(t, srv2.URL, "ta"), "ask research alexandria", ""))
	if !strings.Contains(text, "has no payer") || !strings.Contains(text, `"maxAmountRequired":"10000"`) {
		t.Errorf("call without a payer: %q, want it refused with the requirements", text)
	}
}

// What a principal's payer spent is kept in the agent store's file: after a restart (a new
// server and host, the store reopened on the same SQLite file) alice's budget is still spent,
// and bob's, untouched by hers, still pays.
func TestPayerBudgetSurvivesRestart(t *testing.T) {
	t.Parallel()
	callee := priced(t)
	s, getenv := paying(t, []string{callee.URL, "http://" + callee.GRPCAddr})
	path := filepath.Join(t.TempDir(), "a2awebcap.db")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	st, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	srv, h := startCallerWith(t, s, callerRules(callee.URL), &peer.Options{Getenv: getenv, Spending: st.Spending("writer")})
	_, text := final(events(t, ctx, dial(t, srv.URL, "ta"), "ask research alexandria", ""))
	if !strings.Contains(text, `"paid":{"amount":"10000"`) {
		t.Fatalf("alice's first call: %q, want it paid", text)
	}
	srv.Close()
	_ = h.Close()
	_ = st.Close()

	st = open(t, path)
	srv, _ = startCallerWith(t, s, callerRules(callee.URL), &peer.Options{Getenv: getenv, Spending: st.Spending("writer")})
	_, text = final(events(t, ctx, dial(t, srv.URL, "ta"), "ask research again", ""))
	if !strings.Contains(text, "over what remains of the budget") {
		t.Errorf("alice's call after the restart: %q, want it refused: 10000 of her 15000 were spent before it", text)
	}
	_, text = final(events(t, ctx, dial(t, srv.URL, "tb"), "ask research bob", ""))
	if !strings.Contains(text, `"paid":{"amount":"10000"`) {
		t.Errorf("bob's call after the restart: %q, want it paid from his own budget", text)
	}
}

func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
