package x402_test

import (
	"context"
	"fmt"

	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// A payer signs what a merchant asks, within its budget; the local facilitator verifies it,
// settles it once, and refuses it the second time.
func Example() {
	ctx := context.Background()
	fac := x402.NewLocalFacilitator(nil)
	key, _ := evm.ParsePrivateKey("0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	payer := x402.NewPayer(key, x402.NewBudget(x402.Limit{Network: "base-sepolia", Asset: x402.USDCBaseSepolia.Address, Amount: "15000"}), nil)

	asked := &x402.PaymentRequired{X402Version: x402.Version, Accepts: []x402.Requirements{
		x402.Exact(x402.USDCBaseSepolia, "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "10000", "a research report"),
	}}
	payload, req, err := payer.Pay(ctx, "task-1", asked)
	if err != nil {
		panic(err)
	}
	v, _ := fac.Verify(ctx, payload, req)
	fmt.Println("valid:", v.IsValid, "payer:", v.Payer)
	s, _ := fac.Settle(ctx, payload, req)
	fmt.Println("settled:", s.Success)
	again, _ := fac.Settle(ctx, payload, req)
	fmt.Println("again:", again.Success, x402.ErrorCode(again.ErrorReason))
	_, _, err = payer.Pay(ctx, "task-2", asked) // 10000 more would pass the budget of 15000
	fmt.Println(err != nil)
	// Output:
	// valid: true payer: 0x2c7536E3605D9C16a7a3D7b1898e529396a65c23
	// settled: true
	// again: false DUPLICATE_NONCE
	// true
}
