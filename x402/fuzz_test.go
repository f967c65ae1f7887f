package x402_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// FuzzPayload feeds arbitrary JSON to what reads a client's payment — the metadata decoder and
// the facilitator's checks —, which must refuse it cleanly or accept only a valid payment.
func FuzzPayload(f *testing.F) {
	key, _ := evm.ParsePrivateKey("0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	req := x402.Exact(x402.USDCBaseSepolia, "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "10000", "x")
	now := time.Unix(1_800_000_000, 0)
	p, _ := x402.SignExact(key, &req, now.Add(-time.Minute), now.Add(time.Hour), nil)
	seed, _ := json.Marshal(p)
	f.Add(seed)
	f.Add([]byte(`{"x402Version":1,"scheme":"exact","network":"base-sepolia","payload":{"signature":"0x","authorization":{}}}`))
	f.Add([]byte(`{"x402Version":1,"scheme":"exact","network":"eip155:99999999999999999999","payload":null}`))
	fac := x402.NewLocalFacilitator(&x402.LocalOptions{Now: func() time.Time { return now }})
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw any
		if json.Unmarshal(data, &raw) != nil {
			return
		}
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x"))
		msg.Metadata = map[string]any{x402.KeyStatus: string(x402.StatusSubmitted), x402.KeyPayload: raw}
		payload, err := x402.PayloadOf(msg)
		if err != nil {
			return
		}
		v, err := fac.Verify(context.Background(), payload, &req)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if v.IsValid && v.Payer != key.Address().Hex() {
			t.Fatalf("a payment from %s verified, not signed by the test key", v.Payer)
		}
	})
}
