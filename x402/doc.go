// Package x402 implements the A2A x402 Payments Extension v0.2 (standalone flow) with x402's
// "exact" scheme on EVM chains: paid skills for agents, and paying them. See docs/payments.md.
//
// Three roles:
//
//   - Merchant wraps an agent executor: a priced task answers input-required with the payment
//     requirements in its status message's metadata (x402.payment.required), checks the payment
//     the client submits against what it offered for that task, has a Facilitator verify and
//     settle it, records the receipts in the task, and only then runs the agent. The extension
//     is declared on the card (Declare) and enforced.
//   - Payer pays what a task asks for within a Budget the principal granted, which is never
//     exceeded, also by concurrent payments: it signs an EIP-3009 transferWithAuthorization as
//     EIP-712 typed data with its secp256k1 key (package x402/evm), and reports what it paid.
//   - LocalFacilitator verifies and settles with no chain: it recovers the signer, checks amount,
//     asset, network, recipient, validity window and nonce replay, and keeps a ledger. It serves
//     the facilitator HTTP API (/verify, /settle, /supported), which FacilitatorClient calls.
//
// A merchant, and a payer answering a task that asks for payment:
//
//	m := x402.NewMerchant(agentExecutor, &x402.MerchantOptions{Price: price, Facilitator: fac})
//	m.Declare(card, false)
//	eng := engine.New(m, store, nil)
//
//	p := x402.NewPayer(key, x402.NewBudget(x402.Limit{Network: "base-sepolia", Asset: usdc, Amount: "50000"}), nil)
//	msg, req, err := p.Respond(ctx, task) // task: input-required, x402.payment.status "payment-required"
package x402
