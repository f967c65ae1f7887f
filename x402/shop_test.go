package x402_test

import (
	"context"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// price is what an "echo" or "ask" task costs in the test shop, in USDC's atomic units.
const price = "10000"

// eurc is a second token on base-sepolia the local facilitator knows, so that a payment signed
// for it can be told from a bad signature.
var eurc = x402.Asset{Network: "base-sepolia", Address: "0x808456652fdb597867f38412077A9182bf77359F", Name: "EURC", Version: "2", Decimals: 6}

// shop is a merchant agent (the built-in utility agent, whose "echo" and "ask" cost price)
// served over every binding, and the local facilitator it pays through, over HTTP.
type shop struct {
	fac   *x402.LocalFacilitator
	url   string
	payTo evm.Address
	card  *a2a.AgentCard
}

type shopOptions struct {
	required bool // the card marks the extension required
	ledger   bool // the facilitator keeps balances
}

func newShop(t *testing.T, o shopOptions) *shop {
	t.Helper()
	s := &shop{fac: x402.NewLocalFacilitator(&x402.LocalOptions{Assets: []x402.Asset{x402.USDCBaseSepolia, x402.USDCBase, eurc}, Ledger: o.ledger})}
	facSrv := httptest.NewServer(s.fac)
	t.Cleanup(facSrv.Close)
	merchantKey, err := evm.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s.payTo = merchantKey.Address()
	log := slog.New(slog.DiscardHandler)
	m := x402.NewMerchant(&agents.Builtin{}, &x402.MerchantOptions{
		Price: func(_ context.Context, ec *a2asrv.ExecutorContext) ([]x402.Requirements, error) {
			text := strings.TrimSpace(ec.Message.Parts[0].Text())
			if strings.HasPrefix(text, "echo") || text == "ask" {
				return []x402.Requirements{x402.Exact(x402.USDCBaseSepolia, s.payTo.Hex(), price, "The "+text+" skill")}, nil
			}
			return nil, nil
		},
		Facilitator: x402.NewFacilitatorClient(facSrv.URL, nil),
		Logger:      log,
	})
	s.card = agents.Card("shop", "A priced utility agent.", "", (&agents.Builtin{}).Skills()...)
	m.Declare(s.card, o.required)

	eng := engine.New(m, memory.New(), &engine.Options{Logger: log})
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := binding.NewGRPCServer(eng, &binding.GRPCOptions{Card: s.card})
	go func() { _ = gs.Serve(gln) }()
	t.Cleanup(gs.Stop)
	h := binding.NewHTTPHandler(eng, s.card, &binding.Options{GRPCAddress: gln.Addr().String()})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); _ = h.(interface{ Close() error }).Close() })
	s.url = srv.URL
	return s
}

// bindings are the bindings every payment test runs over.
var bindings = []client.Binding{client.BindingCapnweb, client.BindingJSONRPC, client.BindingREST, client.BindingGRPC}

// client connects to the shop over b, activating the extension unless bare.
func (s *shop) client(t *testing.T, b client.Binding, bare bool) *client.Client {
	t.Helper()
	h := http.Header{}
	if !bare {
		h.Set("A2A-Extensions", x402.ExtensionURI)
	}
	c, err := client.New(t.Context(), s.url, &client.Options{Binding: b, Header: h})
	if err != nil {
		t.Fatalf("client over %s: %v", b, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// send sends a message and returns the task it leaves.
func send(t *testing.T, c *client.Client, msg *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage = %T, want a task", res)
	}
	return task
}

func text(s string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s)) }

func statusText(t *a2a.Task) string {
	if t.Status.Message == nil || len(t.Status.Message.Parts) == 0 {
		return ""
	}
	return t.Status.Message.Parts[0].Text()
}

// newPayer is a payer with a fresh key and a budget of n prices.
func newPayer(t *testing.T, n int64) (*x402.Payer, *x402.Budget) {
	t.Helper()
	key, err := evm.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	total := new(big.Int).Mul(big.NewInt(n), mustInt(price))
	b := x402.NewBudget(x402.Limit{Network: "base-sepolia", Asset: x402.USDCBaseSepolia.Address, Amount: total.String()})
	return x402.NewPayer(key, b, nil), b
}

func mustInt(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

func spentOf(t *testing.T, b *x402.Budget) *big.Int {
	t.Helper()
	s, err := b.Spent(t.Context(), "base-sepolia", x402.USDCBaseSepolia.Address)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func remainingOf(t *testing.T, b *x402.Budget) *big.Int {
	t.Helper()
	r, err := b.Remaining(t.Context(), "base-sepolia", x402.USDCBaseSepolia.Address)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
