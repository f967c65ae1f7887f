package main

// Paying for research (x402, docs/payments.md): researcher.json prices every new task of the
// researcher (its payments), a local facilitator served by the example at /x402 verifies and
// settles payments into a ledger, and the writer's a2a capability pays with a key of its own,
// within the budget writer.json gives it. The example's user, talking to the researcher
// directly, pays too.

import (
	"crypto/rand"
	"encoding/hex"
	"math/big"

	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// What research costs, and in what: 0.01 USDC on Base Sepolia (a test network; the local
// facilitator moves no real funds).
const (
	Price       = "10000"
	PriceInWord = "0.01 USDC"
)

// Asset is the token research is paid in.
var Asset = x402.USDCBaseSepolia

// WriterKeyEnv is the environment variable writer.json's payer reads its key from
// (capabilities.a2a.payer.keyEnv). When it is not set, the example makes a key of its own.
const WriterKeyEnv = "RESEARCH_WRITER_KEY"

// funds is what the facilitator's ledger credits the writer and the user with at start: 1 USDC.
var funds = big.NewInt(1_000_000)

// wallets are the example's keys: the writer's and the user's, who pay (the researcher is paid
// at the address its definition names).
type wallets struct {
	writer, user *evm.PrivateKey
	writerHex    string // the writer's key as its payer reads it
}

func newWallets(getenv func(string) string) (*wallets, error) {
	w := &wallets{}
	var err error
	if w.user, err = evm.GenerateKey(); err != nil {
		return nil, err
	}
	w.writerHex = getenv(WriterKeyEnv)
	for w.writerHex == "" {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		if _, err := evm.PrivateKeyFromBytes(b[:]); err == nil {
			w.writerHex = "0x" + hex.EncodeToString(b[:])
		}
	}
	if w.writer, err = evm.ParsePrivateKey(w.writerHex); err != nil {
		return nil, err
	}
	return w, nil
}

// userPayer is the payer of the example's user, within 0.05 USDC.
func (w *wallets) userPayer() *x402.Payer {
	return x402.NewPayer(w.user, x402.NewBudget(x402.Limit{Network: Asset.Network, Asset: Asset.Address, Amount: "50000"}), nil)
}
