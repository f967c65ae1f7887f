package hosting_test

import (
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/agentstest"
	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// pricedAgent is a researcher whose research costs 10000 of USDC on base-sepolia and whose
// hello is free, with payments as given (%s: the facilitator key, or nothing).
func pricedAgent(payments string) string {
	return `{"name": "researcher", "policy": "none", "rules": [
	  {"name": "research", "description": "Research a topic", "when": "source == \"user\" && command == \"research\" && args != \"\"",
	   "action": "reply", "params": {"text": "\"researching \" + args"}, "reason": "asked"},
	  {"name": "hello", "when": "source == \"user\" && command == \"hello\"", "action": "reply", "params": {"text": "\"hello\""}, "reason": "greeted"}],
	 "payments": ` + payments + `}`
}

func prices(extra string) string {
	return `{"payTo": "` + payTo + `"` + extra + `, "prices": [{"skill": "research", "amount": "10000", "network": "base-sepolia", "asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e"}]}`
}

// A definition's priced skill is paid before it runs, on every binding: a new task of its form
// asks for payment (input-required, with the requirements), and completes with the receipt
// once paid through the facilitator; another skill is free; a caller that does not activate
// the extension is refused; the card declares it.
func TestPricedSkill(t *testing.T) {
	t.Parallel()
	fac := x402.NewLocalFacilitator(&x402.LocalOptions{Assets: []x402.Asset{x402.USDCBaseSepolia}, Ledger: true})
	fsrv := httptest.NewServer(fac)
	t.Cleanup(fsrv.Close)
	defs, err := hosting.ParseDefinitions([]byte(pricedAgent(prices(`, "facilitator": "` + fsrv.URL + `"`))))
	if err != nil {
		t.Fatal(err)
	}
	srv := agentstest.Start(t, defs, nil)
	card := srv.Agents.Get("researcher").Card
	if !slices.ContainsFunc(card.Capabilities.Extensions, func(e a2a.AgentExtension) bool { return e.URI == x402.ExtensionURI && !e.Required }) {
		t.Errorf("card extensions = %+v, want x402's, not required", card.Capabilities.Extensions)
	}
	key, err := evm.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	fac.Fund(x402.USDCBaseSepolia, key.Address(), big.NewInt(1_000_000))
	payer := x402.NewPayer(key, x402.NewBudget(x402.Limit{Network: "base-sepolia", Asset: x402.USDCBaseSepolia.Address, Amount: "1000000"}), nil)
	for _, b := range bindings {
		t.Run(string(b), func(t *testing.T) {
			c, err := client.New(t.Context(), srv.AgentURL("researcher"), &client.Options{Binding: b,
				Header: http.Header{"A2A-Extensions": {x402.ExtensionURI}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Destroy() })
			if got := reply(send(t, c, "hello")); got != "hello" {
				t.Errorf("free skill: %q, want hello", got)
			}
			for _, text := range []string{"research tides", "RESEARCH  tides and moons"} {
				asked := sendMessage(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)))
				pr, ok, err := x402.RequiredOf(asked)
				if !ok || err != nil || asked.Status.State != a2a.TaskStateInputRequired || pr.Accepts[0].MaxAmountRequired != "10000" || pr.Accepts[0].PayTo != payTo {
					t.Fatalf("%q: %s %q, want input-required asking 10000 for %s", text, asked.Status.State, reply(asked), payTo)
				}
				msg, _, err := payer.Respond(t.Context(), asked)
				if err != nil {
					t.Fatal(err)
				}
				done := sendMessage(t, c, msg)
				rs := x402.ReceiptsOf(done)
				if done.Status.State != a2a.TaskStateCompleted || !strings.HasPrefix(reply(done), "researching tides") || len(rs) != 1 || !rs[0].Success {
					t.Errorf("%q paid: %s %q, receipts %+v; want completed, researched, one receipt", text, done.Status.State, reply(done), rs)
				}
			}
		})
	}
	if got := fac.Balance(x402.USDCBaseSepolia, mustAddress(t, payTo)); got.Int64() != int64(10000*2*len(bindings)) {
		t.Errorf("payTo's balance = %s, want %d: two research tasks paid per binding", got, 10000*2*len(bindings))
	}
	bare := dial(t, srv.AgentURL("researcher"), client.BindingJSONRPC, "")
	if _, err := bare.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("research tides"))}); err == nil || !strings.Contains(err.Error(), "x402") {
		t.Errorf("priced request without the extension: %v, want it refused (ExtensionSupportRequired)", err)
	}
}

// What cannot be priced is refused when the definition is read or the agent made, saying why.
func TestPricesRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ payments, facilitator, want string }{
		{`{"payTo": "0x12", "prices": []}`, "", "payments.payTo"},
		{`{"payTo": "` + payTo + `", "prices": []}`, "", "payments.prices: required"},
		{`{"payTo": "` + payTo + `", "prices": [{"skill": "research", "amount": "0", "network": "base-sepolia", "asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e"}]}`, "", "amount \"0\""},
		{`{"payTo": "` + payTo + `", "prices": [{"skill": "research", "amount": "` + strings.Repeat("9", 78) + `", "network": "base-sepolia", "asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e"}]}`, "", "amount \"999"}, // over 2^256: no payer could pay it
		{`{"payTo": "` + payTo + `", "prices": [{"skill": "research", "amount": "1", "network": "base", "asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e"}]}`, "", "no known token"},
		{prices(""), "", "needs payments.facilitator"},
		{strings.Replace(prices(""), `"research"`, `"fly"`, 1), "http://127.0.0.1:1", `"fly" is not a skill of the agent (its skills: research, hello)`},
	} {
		defs, err := hosting.ParseDefinitions([]byte(pricedAgent(tc.payments)))
		if err == nil {
			_, err = hosting.New(defs, &hosting.Options{Facilitator: tc.facilitator})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("payments %s: %v, want an error with %q", tc.payments, err, tc.want)
		}
	}
	// The server's facilitator serves a definition that names none.
	defs, err := hosting.ParseDefinitions([]byte(pricedAgent(prices(""))))
	if err != nil {
		t.Fatal(err)
	}
	a, err := hosting.New(defs, &hosting.Options{Facilitator: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatalf("with the server's facilitator: %v", err)
	}
	_ = a.Close()
}

func mustAddress(t *testing.T, s string) evm.Address {
	t.Helper()
	a, err := evm.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// sendMessage sends msg and returns its task once it ends or asks.
func sendMessage(t *testing.T, c *client.Client, msg *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatalf("SendMessage over %s = %v", c.Binding(), err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage = %T, want a task", res)
	}
	settled := func(tk *a2a.Task) bool {
		return tk.Status.State.Terminal() || tk.Status.State == a2a.TaskStateInputRequired
	}
	if !settled(task) {
		task = a2atest.WaitTask(t, c, task.ID, settled)
	}
	return task
}
