package x402_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// submit is the message that submits payload on task, its metadata as given.
func submit(task *a2a.Task, payload any) *a2a.Message {
	msg := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("payment"))
	msg.Metadata = map[string]any{x402.KeyStatus: string(x402.StatusSubmitted), x402.KeyPayload: payload}
	return msg
}

// sign signs req (as the test changes it) with key, valid from after to before.
func sign(t *testing.T, key *evm.PrivateKey, req x402.Requirements, after, before time.Time) *x402.Payload {
	t.Helper()
	p, err := x402.SignExact(key, &req, after, before, nil)
	if err != nil {
		t.Fatalf("SignExact: %v", err)
	}
	return p
}

// TestRefusals: every way a payment can be wrong ends the task failed, with the spec's error
// code, a failed receipt, and the skill not run.
func TestRefusals(t *testing.T) {
	t.Parallel()
	key, err := evm.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	hour := time.Hour
	other := "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	cases := []struct {
		name   string
		ledger bool
		// pay returns the payload to submit for the offered requirement.
		pay  func(offered x402.Requirements) any
		code string
	}{
		{"underpayment", false, func(r x402.Requirements) any {
			r.MaxAmountRequired = "9999"
			return sign(t, key, r, now.Add(-hour), now.Add(hour))
		}, x402.CodeInvalidAmount},
		{"other network named", false, func(r x402.Requirements) any {
			r.Network, r.Asset, r.Extra = "base", x402.USDCBase.Address, map[string]any{"name": x402.USDCBase.Name, "version": x402.USDCBase.Version}
			return sign(t, key, r, now.Add(-hour), now.Add(hour))
		}, x402.CodeNetworkMismatch},
		{"signed for another chain", false, func(r x402.Requirements) any {
			r.Network, r.Asset, r.Extra = "base", x402.USDCBase.Address, map[string]any{"name": x402.USDCBase.Name, "version": x402.USDCBase.Version}
			p := sign(t, key, r, now.Add(-hour), now.Add(hour))
			p.Network = "base-sepolia" // claims the offered network
			return p
		}, x402.CodeNetworkMismatch},
		{"other asset", false, func(r x402.Requirements) any {
			r.Asset, r.Extra = eurc.Address, map[string]any{"name": eurc.Name, "version": eurc.Version}
			return sign(t, key, r, now.Add(-hour), now.Add(hour))
		}, x402.CodeAssetMismatch},
		{"expired", false, func(r x402.Requirements) any {
			return sign(t, key, r, now.Add(-2*hour), now.Add(-hour))
		}, x402.CodeExpired},
		{"expires before it can settle", false, func(r x402.Requirements) any {
			return sign(t, key, r, now.Add(-hour), now.Add(2*time.Second))
		}, x402.CodeExpired},
		{"not yet valid", false, func(r x402.Requirements) any {
			return sign(t, key, r, now.Add(hour), now.Add(2*hour))
		}, x402.CodeNotYetValid},
		{"value changed after signing", false, func(r x402.Requirements) any {
			p := sign(t, key, r, now.Add(-hour), now.Add(hour))
			p.Payload.Authorization.Value = "20000"
			return p
		}, x402.CodeInvalidSignature},
		{"from changed after signing", false, func(r x402.Requirements) any {
			p := sign(t, key, r, now.Add(-hour), now.Add(hour))
			p.Payload.Authorization.From = other
			return p
		}, x402.CodeInvalidSignature},
		{"other recipient", false, func(r x402.Requirements) any {
			r.PayTo = other
			return sign(t, key, r, now.Add(-hour), now.Add(hour))
		}, x402.CodeRecipientMismatch},
		{"insufficient funds", true, func(r x402.Requirements) any {
			return sign(t, key, r, now.Add(-hour), now.Add(hour))
		}, x402.CodeInsufficientFunds},
		{"unknown key", false, func(r x402.Requirements) any {
			p := sign(t, key, r, now.Add(-hour), now.Add(hour))
			m := map[string]any{"x402Version": 1, "scheme": p.Scheme, "network": p.Network, "payload": map[string]any{
				"signature": p.Payload.Signature, "authorization": map[string]any{
					"from": p.Payload.Authorization.From, "to": p.Payload.Authorization.To, "value": p.Payload.Authorization.Value,
					"validAfter": p.Payload.Authorization.ValidAfter, "validBefore": p.Payload.Authorization.ValidBefore,
					"nonce": p.Payload.Authorization.Nonce, "Value": "1"}}}
			return m
		}, x402.CodeInvalidPayload},
		{"other scheme", false, func(r x402.Requirements) any {
			p := sign(t, key, r, now.Add(-hour), now.Add(hour))
			p.Scheme = "upto"
			return p
		}, x402.CodeInvalidPayload},
		{"not a payload", false, func(x402.Requirements) any { return "pay me later" }, x402.CodeInvalidPayload},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newShop(t, shopOptions{ledger: tc.ledger})
			c := s.client(t, "jsonrpc", false)
			task := send(t, c, text("echo must not run"))
			pr, _, err := x402.RequiredOf(task)
			if err != nil {
				t.Fatal(err)
			}
			done := send(t, c, submit(task, tc.pay(pr.Accepts[0])))
			if done.Status.State != a2a.TaskStateFailed {
				t.Fatalf("state %s %q, want failed", done.Status.State, statusText(done))
			}
			meta := done.Status.Message.Metadata
			if meta[x402.KeyStatus] != string(x402.StatusFailed) || meta[x402.KeyError] != tc.code {
				t.Errorf("x402 status %v, error %v; want payment-failed, %s (%q)", meta[x402.KeyStatus], meta[x402.KeyError], tc.code, statusText(done))
			}
			if rs := x402.ReceiptsOf(done); len(rs) != 1 || rs[0].Success || rs[0].ErrorReason == "" {
				t.Errorf("receipts = %+v, want one failed receipt with a reason", rs)
			}
			if !strings.Contains(statusText(done), tc.code) {
				t.Errorf("status text %q does not name %s", statusText(done), tc.code)
			}
			if s.fac.Settled() != 0 {
				t.Error("a refused payment was settled")
			}
		})
	}
}

// TestReplay: an authorization that paid one task cannot pay another.
func TestReplay(t *testing.T) {
	t.Parallel()
	s := newShop(t, shopOptions{})
	c := s.client(t, "jsonrpc", false)
	payer, _ := newPayer(t, 1)
	first := send(t, c, text("echo once"))
	msg, _, err := payer.Respond(t.Context(), first)
	if err != nil {
		t.Fatal(err)
	}
	if done := send(t, c, msg); done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("first payment: %s %q", done.Status.State, statusText(done))
	}
	second := send(t, c, text("echo twice"))
	done := send(t, c, submit(second, msg.Metadata[x402.KeyPayload]))
	if done.Status.State != a2a.TaskStateFailed || done.Status.Message.Metadata[x402.KeyError] != x402.CodeDuplicateNonce {
		t.Errorf("replayed payment: %s, error %v; want failed, DUPLICATE_NONCE", done.Status.State, done.Status.Message.Metadata[x402.KeyError])
	}
	if s.fac.Settled() != 1 {
		t.Errorf("settled %d, want 1", s.fac.Settled())
	}
}

// TestSettleOnce: of many concurrent settlements of one authorization, exactly one succeeds.
func TestSettleOnce(t *testing.T) {
	t.Parallel()
	f := x402.NewLocalFacilitator(nil)
	key, _ := evm.GenerateKey()
	req := x402.Exact(x402.USDCBaseSepolia, "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "5", "x")
	p := sign(t, key, req, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, dup := 0, 0
	for range 32 {
		wg.Go(func() {
			r, _ := f.Settle(context.Background(), p, &req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Success:
				ok++
			case r.ErrorReason == x402.ReasonNonce:
				dup++
			default:
				t.Errorf("Settle: %+v", r)
			}
		})
	}
	wg.Wait()
	if ok != 1 || dup != 31 {
		t.Errorf("%d settled, %d duplicates; want 1 and 31", ok, dup)
	}
	if v, _ := f.Verify(context.Background(), p, &req); v.IsValid || v.InvalidReason != x402.ReasonNonce {
		t.Errorf("Verify after settlement = %+v, want the nonce refused", v)
	}
}

// TestNoncesForgottenWhenExpired: the facilitator forgets a used nonce once its authorization
// expired (a replay then fails on expiry), so its memory stays bounded.
func TestNoncesForgottenWhenExpired(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	f := x402.NewLocalFacilitator(&x402.LocalOptions{Now: func() time.Time { return now }})
	key, _ := evm.GenerateKey()
	req := x402.Exact(x402.USDCBaseSepolia, "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "5", "x")
	p := sign(t, key, req, now.Add(-time.Minute), now.Add(time.Minute))
	if r, _ := f.Settle(context.Background(), p, &req); !r.Success {
		t.Fatalf("Settle: %+v", r)
	}
	now = now.Add(2 * time.Hour)
	q := sign(t, key, req, now.Add(-time.Minute), now.Add(time.Minute))
	if r, _ := f.Settle(context.Background(), q, &req); !r.Success { // prunes
		t.Fatalf("Settle: %+v", r)
	}
	if v, _ := f.Verify(context.Background(), p, &req); v.InvalidReason != x402.ReasonValidBefore {
		t.Errorf("replay of an expired authorization = %+v, want %s", v, x402.ReasonValidBefore)
	}
}

// TestFacilitatorHTTP: the facilitator API reads bodies strictly and answers x402's shapes.
func TestFacilitatorHTTP(t *testing.T) {
	t.Parallel()
	f := x402.NewLocalFacilitator(nil)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	post := func(path, body string) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	for name, body := range map[string]string{
		"duplicate key": `{"x402Version":1,"x402Version":1,"paymentPayload":{},"paymentRequirements":{}}`,
		"case smuggled": `{"x402Version":1,"PaymentPayload":{},"paymentRequirements":{}}`,
		"not json":      `x`,
		"missing":       `{"x402Version":1}`,
	} {
		if code, out := post("/verify", body); code != http.StatusBadRequest || !strings.Contains(out, x402.ReasonPayload) {
			t.Errorf("/verify %s: %d %s", name, code, out)
		}
	}
	resp, err := http.Get(srv.URL + "/supported")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/supported: %v %v", resp, err)
	}
	resp.Body.Close()
	key, _ := evm.GenerateKey()
	req := x402.Exact(x402.USDCBaseSepolia, "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "5", "x")
	p := sign(t, key, req, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	fc := x402.NewFacilitatorClient(srv.URL, nil)
	if v, err := fc.Verify(t.Context(), p, &req); err != nil || !v.IsValid || v.Payer != key.Address().Hex() {
		t.Errorf("Verify over HTTP = %+v, %v", v, err)
	}
	if s, err := fc.Settle(t.Context(), p, &req); err != nil || !s.Success {
		t.Errorf("Settle over HTTP = %+v, %v", s, err)
	}
	down := x402.NewFacilitatorClient("http://127.0.0.1:1", nil)
	if _, err := down.Verify(t.Context(), p, &req); err == nil {
		t.Error("Verify against nothing succeeded")
	}
}
