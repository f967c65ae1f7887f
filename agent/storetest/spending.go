package storetest

import (
	"errors"
	"fmt"
	"math/big"
	"sync"
	"testing"

	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// Spending checks the x402.Spending of a store (what payers' budgets spent, package
// agent/peer). a and b are two handles on one database — two processes or replicas sharing it
// (b may be a): what one takes, the other sees, and their concurrent takes together never pass
// the limit.
func Spending(t *testing.T, a, b x402.Spending) {
	const network, asset = "base-sepolia", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	spent := func(t *testing.T, s x402.Spending, account string) string {
		t.Helper()
		n, err := s.Spent(t.Context(), account, network, asset)
		if err != nil {
			t.Fatalf("Spent(%s) = %v", account, err)
		}
		return n.String()
	}
	take := func(t *testing.T, s x402.Spending, account string, amount, limit int64) bool {
		t.Helper()
		ok, err := s.Take(t.Context(), account, network, asset, big.NewInt(amount), big.NewInt(limit))
		if err != nil {
			t.Fatalf("Take(%s, %d, %d) = %v", account, amount, limit, err)
		}
		return ok
	}
	t.Run("TakeWithinTheLimitPerAccount", func(t *testing.T) {
		alice, bob := "alice@"+t.Name(), "bob@"+t.Name()
		if got := spent(t, a, alice); got != "0" {
			t.Errorf("Spent(alice) before any take = %s, want 0", got)
		}
		if !take(t, a, alice, 6000, 10000) {
			t.Error("Take(alice, 6000 of 10000) = false, want true")
		}
		if take(t, b, alice, 6000, 10000) {
			t.Error("Take(alice, 6000 more of 10000) = true, want false: the limit would pass")
		}
		if take(t, b, alice, 20000, 10000) {
			t.Error("Take(alice, 20000 of 10000) = true, want false")
		}
		if !take(t, b, alice, 4000, 10000) {
			t.Error("Take(alice, the last 4000 of 10000) = false, want true")
		}
		if got := spent(t, b, alice); got != "10000" {
			t.Errorf("Spent(alice) = %s, want 10000", got)
		}
		// bob's account is his own.
		if got := spent(t, a, bob); got != "0" {
			t.Errorf("Spent(bob) = %s, want 0: alice's spending is not his", got)
		}
		if !take(t, a, bob, 10000, 10000) {
			t.Error("Take(bob, 10000 of 10000) = false, want true")
		}
		// Give takes back, never below zero.
		if err := a.Give(t.Context(), alice, network, asset, big.NewInt(4000)); err != nil {
			t.Fatal(err)
		}
		if got := spent(t, b, alice); got != "6000" {
			t.Errorf("Spent(alice) after giving back 4000 = %s, want 6000", got)
		}
		if err := b.Give(t.Context(), alice, network, asset, big.NewInt(1<<40)); err != nil {
			t.Fatal(err)
		}
		if got := spent(t, a, alice); got != "0" {
			t.Errorf("Spent(alice) after giving back more than spent = %s, want 0", got)
		}
		// Amounts past 64 bits (a token of 18 decimals, say) are kept exactly.
		huge, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
		limit := new(big.Int).Mul(huge, big.NewInt(2))
		for range 2 {
			if ok, err := a.Take(t.Context(), "carol@"+t.Name(), network, asset, huge, limit); err != nil || !ok {
				t.Fatalf("Take(carol, %s of %s) = %v, %v; want true", huge, limit, ok, err)
			}
		}
		if ok, _ := b.Take(t.Context(), "carol@"+t.Name(), network, asset, big.NewInt(1), limit); ok {
			t.Error("Take(carol, 1 past a limit of 2^97) = true, want false")
		}
		if got := spent(t, b, "carol@"+t.Name()); got != limit.String() {
			t.Errorf("Spent(carol) = %s, want %s", got, limit)
		}
	})
	t.Run("ConcurrentTakesNeverPassTheLimit", func(t *testing.T) {
		account := "dave@" + t.Name()
		var wg sync.WaitGroup
		var mu sync.Mutex
		took := 0
		for i := range 40 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() {
				ok, err := s.Take(t.Context(), account, network, asset, big.NewInt(1000), big.NewInt(5000))
				if err != nil {
					t.Errorf("Take: %v", err)
					return
				}
				if ok {
					mu.Lock()
					took++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if took != 5 {
			t.Errorf("%d concurrent takes of 1000 within 5000 succeeded, want 5", took)
		}
		if got := spent(t, a, account); got != fmt.Sprint(5000) {
			t.Errorf("Spent = %s, want 5000", got)
		}
	})
	t.Run("PayersOfTwoProcessesNeverPassTheBudget", func(t *testing.T) {
		// Two payers of one principal, one per handle (per replica), pay 30 requests at once
		// from a budget of three: three are signed.
		key, err := evm.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		account := "erin@" + t.Name()
		limit := x402.Limit{Network: network, Asset: asset, Amount: "30000"}
		payers := []*x402.Payer{x402.NewPayer(key, x402.NewBudgetIn(a, account, limit), nil), x402.NewPayer(key, x402.NewBudgetIn(b, account, limit), nil)}
		pr := &x402.PaymentRequired{X402Version: 1, Accepts: []x402.Requirements{
			x402.Exact(x402.USDCBaseSepolia, "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "10000", "a thing")}}
		var wg sync.WaitGroup
		var mu sync.Mutex
		paid := 0
		for i := range 30 {
			wg.Go(func() {
				_, _, err := payers[i%2].Pay(t.Context(), "task", pr)
				switch {
				case err == nil:
					mu.Lock()
					paid++
					mu.Unlock()
				case !errors.Is(err, x402.ErrNoAcceptable):
					t.Errorf("Pay: %v", err)
				}
			})
		}
		wg.Wait()
		if paid != 3 {
			t.Errorf("%d of 30 concurrent payments signed from a budget of 3, want 3", paid)
		}
		if got := spent(t, b, account); got != "30000" {
			t.Errorf("Spent = %s, want 30000", got)
		}
	})
}
