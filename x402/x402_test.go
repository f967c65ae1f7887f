package x402_test

import (
	"errors"
	"math/big"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/x402"
)

// TestPayAndComplete: a priced task asks for payment, the payer pays within its budget, the
// merchant verifies and settles through the facilitator (over HTTP), and only then does the
// skill run; the task ends completed with the receipt, on every binding.
func TestPayAndComplete(t *testing.T) {
	t.Parallel()
	for _, b := range bindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			s := newShop(t, shopOptions{ledger: true})
			c := s.client(t, b, false)
			payer, budget := newPayer(t, 3)
			s.fac.Fund(x402.USDCBaseSepolia, payer.Address(), mustInt("25000"))

			task := send(t, c, text("echo paid words"))
			if task.Status.State != a2a.TaskStateInputRequired || x402.StatusOf(task.Status.Message) != x402.StatusRequired {
				t.Fatalf("first answer: %s %q, want input-required with payment-required", task.Status.State, statusText(task))
			}
			pr, ok, err := x402.RequiredOf(task)
			if !ok || err != nil || len(pr.Accepts) != 1 || pr.Accepts[0].MaxAmountRequired != price || pr.Accepts[0].PayTo != s.payTo.Hex() {
				t.Fatalf("RequiredOf = %+v, %v, %v", pr, ok, err)
			}
			if len(task.Artifacts) != 0 {
				t.Fatalf("the skill ran before payment: artifacts %v", task.Artifacts)
			}

			msg, req, err := payer.Respond(t.Context(), task)
			if err != nil {
				t.Fatalf("Respond: %v", err)
			}
			if req.MaxAmountRequired != price {
				t.Errorf("paid requirement %+v", req)
			}
			done := send(t, c, msg)
			if done.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("after payment: %s %q, want completed", done.Status.State, statusText(done))
			}
			if got := statusText(done); got != "paid words" {
				t.Errorf("the skill's answer = %q, want %q", got, "paid words")
			}
			// Receipts in the task: in the final status, and as stored (GetTask).
			stored, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
			if err != nil {
				t.Fatal(err)
			}
			for name, tk := range map[string]*a2a.Task{"final": done, "stored": stored} {
				if x402.StatusOf(tk.Status.Message) != x402.StatusCompleted {
					t.Errorf("%s status x402.payment.status = %q, want payment-completed", name, x402.StatusOf(tk.Status.Message))
				}
				rs := x402.ReceiptsOf(tk)
				if len(rs) != 1 || !rs[0].Success || rs[0].Network != "base-sepolia" || rs[0].Payer != payer.Address().Hex() || len(rs[0].Transaction) != 66 {
					t.Errorf("%s receipts = %+v", name, rs)
				}
			}
			// The steps are in the history: asked, verified, settled (with the receipt, before
			// the skill ran), then the skill's answer.
			var steps []x402.Status
			for _, m := range stored.History {
				if m.Role == a2a.MessageRoleAgent {
					steps = append(steps, x402.StatusOf(m))
				}
			}
			if diff := cmp.Diff([]x402.Status{x402.StatusRequired, x402.StatusVerified, x402.StatusCompleted, x402.StatusCompleted}, steps); diff != "" {
				t.Errorf("payment steps in the history (-want +got):\n%s", diff)
			}
			// The money moved, and the payer reports it.
			if got := s.fac.Balance(x402.USDCBaseSepolia, s.payTo); got.String() != price {
				t.Errorf("merchant balance = %s, want %s", got, price)
			}
			if got := s.fac.Balance(x402.USDCBaseSepolia, payer.Address()); got.String() != "15000" {
				t.Errorf("payer balance = %s, want 15000", got)
			}
			payer.Record(done)
			ps := payer.Payments()
			if len(ps) != 1 || ps[0].TaskID != task.ID || ps[0].Amount != price || ps[0].Receipt == nil || !ps[0].Receipt.Success {
				t.Errorf("Payments() = %+v", ps)
			}
			if got := spentOf(t, budget); got.String() != price {
				t.Errorf("budget spent = %s, want %s", got, price)
			}
		})
	}
}

// TestFreeTaskNeedsNoPayment: an unpriced request goes straight to the agent, with or without
// the extension (the card does not mark it required).
func TestFreeTaskNeedsNoPayment(t *testing.T) {
	t.Parallel()
	s := newShop(t, shopOptions{})
	for _, bare := range []bool{false, true} {
		c := s.client(t, client.BindingJSONRPC, bare)
		res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: text("time")})
		if err != nil {
			t.Fatalf("free request (bare %v): %v", bare, err)
		}
		if _, ok := res.(*a2a.Message); !ok {
			t.Errorf("free request answered %T, want the agent's message", res)
		}
	}
}

// TestExtensionEnforced: a priced request without the extension activated is refused with
// ExtensionSupportRequiredError, and with the extension marked required every request is.
func TestExtensionEnforced(t *testing.T) {
	t.Parallel()
	for _, b := range bindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			s := newShop(t, shopOptions{})
			c := s.client(t, b, true)
			_, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: text("echo hi")})
			if !errors.Is(err, a2a.ErrExtensionSupportRequired) {
				t.Errorf("priced request without the extension: %v, want ExtensionSupportRequired", err)
			}
			req := newShop(t, shopOptions{required: true})
			if ext := req.card.Capabilities.Extensions; len(ext) != 1 || ext[0].URI != x402.ExtensionURI || !ext[0].Required {
				t.Fatalf("card extensions = %+v", ext)
			}
			rc := req.client(t, b, true)
			if _, err := rc.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: text("time")}); !errors.Is(err, a2a.ErrExtensionSupportRequired) {
				t.Errorf("free request to an agent requiring the extension: %v, want ExtensionSupportRequired", err)
			}
		})
	}
}

// TestReceiptsCarried: a paid skill that asks a question keeps the receipts in the task through
// the question and its answer, to the end.
func TestReceiptsCarried(t *testing.T) {
	t.Parallel()
	s := newShop(t, shopOptions{})
	c := s.client(t, client.BindingJSONRPC, false)
	payer, _ := newPayer(t, 1)
	task := send(t, c, text("ask"))
	msg, _, err := payer.Respond(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	q := send(t, c, msg)
	if q.Status.State != a2a.TaskStateInputRequired || len(x402.ReceiptsOf(q)) != 1 {
		t.Fatalf("after payment: %s %q receipts %v, want the skill's question with the receipt", q.Status.State, statusText(q), x402.ReceiptsOf(q))
	}
	if _, ok, _ := x402.RequiredOf(q); ok {
		t.Fatal("the skill's question reads as a payment request")
	}
	answer := a2a.NewMessageForTask(a2a.MessageRoleUser, q, a2a.NewTextPart("Ada"))
	done := send(t, c, answer)
	if done.Status.State != a2a.TaskStateCompleted || len(x402.ReceiptsOf(done)) != 1 || x402.StatusOf(done.Status.Message) != x402.StatusCompleted {
		t.Fatalf("end: %s %q receipts %v", done.Status.State, statusText(done), x402.ReceiptsOf(done))
	}
}

// TestDeclineAndReask: a message that is not a payment gets the requirements again; a declined
// payment cancels the task.
func TestDeclineAndReask(t *testing.T) {
	t.Parallel()
	s := newShop(t, shopOptions{})
	c := s.client(t, client.BindingREST, false)
	payer, budget := newPayer(t, 1)
	task := send(t, c, text("echo x"))
	again := send(t, c, a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("what?")))
	if _, ok, err := x402.RequiredOf(again); !ok || err != nil {
		t.Fatalf("a non-payment message: %s %q, want payment-required again", again.Status.State, statusText(again))
	}
	declined := send(t, c, payer.Decline(again, "too dear"))
	if declined.Status.State != a2a.TaskStateCanceled || x402.StatusOf(declined.Status.Message) != x402.StatusRejected {
		t.Errorf("declined: %s, x402 status %q", declined.Status.State, x402.StatusOf(declined.Status.Message))
	}
	if spentOf(t, budget).Sign() != 0 {
		t.Error("declining spent the budget")
	}
}

// TestBudgetNeverExceeded: many concurrent payments against a budget of a few: exactly as many
// as it covers are signed, the others refused, and what was spent is the limit.
func TestBudgetNeverExceeded(t *testing.T) {
	t.Parallel()
	payer, budget := newPayer(t, 5)
	pr := &x402.PaymentRequired{X402Version: 1, Accepts: []x402.Requirements{
		x402.Exact(x402.USDCBaseSepolia, "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", price, "a thing")}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	paid, refused := 0, 0
	for range 40 {
		wg.Go(func() {
			_, _, err := payer.Pay(t.Context(), "t", pr)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				paid++
			case errors.Is(err, x402.ErrNoAcceptable):
				refused++
			default:
				t.Errorf("Pay: %v", err)
			}
		})
	}
	wg.Wait()
	if paid != 5 || refused != 35 {
		t.Errorf("paid %d, refused %d; want 5 and 35", paid, refused)
	}
	limit := new(big.Int).Mul(big.NewInt(5), mustInt(price))
	if got := spentOf(t, budget); got.Cmp(limit) != 0 {
		t.Errorf("spent %s, want the limit %s", got, limit)
	}
	if got := remainingOf(t, budget); got.Sign() != 0 {
		t.Errorf("remaining %s, want 0", got)
	}
	if len(payer.Payments()) != 5 {
		t.Errorf("%d payments reported, want 5", len(payer.Payments()))
	}
}

// TestBudgetAcrossTasks: concurrent priced tasks, end to end, with a budget for two: two
// complete, the others are never paid.
func TestBudgetAcrossTasks(t *testing.T) {
	t.Parallel()
	s := newShop(t, shopOptions{})
	c := s.client(t, client.BindingJSONRPC, false)
	payer, budget := newPayer(t, 2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	completed, refused := 0, 0
	for range 6 {
		wg.Go(func() {
			task := send(t, c, text("echo concurrent"))
			msg, _, err := payer.Respond(t.Context(), task)
			if errors.Is(err, x402.ErrNoAcceptable) {
				mu.Lock()
				refused++
				mu.Unlock()
				return
			}
			if err != nil {
				t.Errorf("Respond: %v", err)
				return
			}
			if done := send(t, c, msg); done.Status.State == a2a.TaskStateCompleted {
				mu.Lock()
				completed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if completed != 2 || refused != 4 {
		t.Errorf("completed %d, refused %d; want 2 and 4", completed, refused)
	}
	if got := s.fac.Settled(); got != 2 {
		t.Errorf("facilitator settled %d payments, want 2", got)
	}
	if got := remainingOf(t, budget); got.Sign() != 0 {
		t.Errorf("remaining %s, want 0", got)
	}
}
