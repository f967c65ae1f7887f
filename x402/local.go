package x402

// The local facilitator: verification exactly as the "exact" scheme requires, settlement into
// an in-memory ledger, no chain.
//
// Concurrency model. A LocalFacilitator is shared by every request. Verify does its checks —
// parsing, signature recovery, amounts, windows — without a lock, then reads the used nonces
// and the ledger under mu. Settle does the same checks, then, under mu, checks the nonce and
// the balance again and records both, so that of two settlements of one authorization exactly
// one succeeds. mu is held for map operations only, never across I/O or signature recovery.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2awebcap/a2awebcap/internal/strictjson"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// LocalOptions configure NewLocalFacilitator. Nil means the defaults.
type LocalOptions struct {
	// Assets are the tokens it verifies and settles. Nil: USDCBase and USDCBaseSepolia.
	Assets []Asset
	// Ledger keeps balances: every payer starts with none (Fund gives some), a payment needs
	// the balance to cover it, and settling moves the value from payer to recipient. Zero
	// (false): balances are not checked.
	Ledger bool
	// MinValidity is how long an authorization must still be valid when it is verified, so it
	// can be settled in time. Zero: 6 seconds.
	MinValidity time.Duration
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
}

// LocalFacilitator is a Facilitator with no chain, for tests and development. It is safe for
// concurrent use, and is also an http.Handler serving the facilitator API.
type LocalFacilitator struct {
	assets      []localAsset
	ledger      bool
	minValidity time.Duration
	now         func() time.Time

	mu       sync.Mutex
	used     map[nonceKey]int64   // → validBefore (Unix): forgotten once expired
	balances map[acctKey]*big.Int // with Ledger
	txs      uint64
	pruned   time.Time
}

type localAsset struct {
	Asset
	d domain
}

type nonceKey struct {
	chain    string
	contract evm.Address
	from     evm.Address
	nonce    [32]byte
}

type acctKey struct {
	chain    string
	contract evm.Address
	who      evm.Address
}

// NewLocalFacilitator returns a local facilitator. It panics on an asset whose network or
// address does not parse. opts may be nil.
func NewLocalFacilitator(opts *LocalOptions) *LocalFacilitator {
	var o LocalOptions
	if opts != nil {
		o = *opts
	}
	if o.Assets == nil {
		o.Assets = []Asset{USDCBase, USDCBaseSepolia}
	}
	if o.MinValidity == 0 {
		o.MinValidity = 6 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	f := &LocalFacilitator{ledger: o.Ledger, minValidity: o.MinValidity, now: o.Now,
		used: map[nonceKey]int64{}, balances: map[acctKey]*big.Int{}}
	for _, a := range o.Assets {
		d, err := domainOf(&Requirements{Network: a.Network, Asset: a.Address, Extra: map[string]any{"name": a.Name, "version": a.Version}})
		if err != nil {
			panic(fmt.Sprintf("x402: NewLocalFacilitator: asset %+v: %v", a, err))
		}
		f.assets = append(f.assets, localAsset{Asset: a, d: d})
	}
	return f
}

// Fund adds amount (atomic units) to who's balance of asset, with Ledger.
func (f *LocalFacilitator) Fund(asset Asset, who evm.Address, amount *big.Int) {
	k := f.account(asset, who)
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.balances[k]
	if b == nil {
		b = new(big.Int)
		f.balances[k] = b
	}
	b.Add(b, amount)
}

// Balance returns who's balance of asset.
func (f *LocalFacilitator) Balance(asset Asset, who evm.Address) *big.Int {
	k := f.account(asset, who)
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.balances[k]; b != nil {
		return new(big.Int).Set(b)
	}
	return new(big.Int)
}

func (f *LocalFacilitator) account(asset Asset, who evm.Address) acctKey {
	id, err := ChainID(asset.Network)
	c, err2 := evm.ParseAddress(asset.Address)
	if err != nil || err2 != nil {
		panic(fmt.Sprintf("x402: asset %+v does not parse", asset))
	}
	return acctKey{chain: id.String(), contract: c, who: who}
}

// checked is a payment that passed the checks that need no state.
type checked struct {
	a   *auth
	d   domain
	req *Requirements
}

// refusal is a verification's negative answer.
type refusal struct {
	reason string
	payer  string
}

// check verifies everything but the nonce and the balance.
func (f *LocalFacilitator) check(p *Payload, req *Requirements) (*checked, *refusal) {
	switch {
	case p == nil || req == nil:
		return nil, &refusal{reason: ReasonPayload}
	case p.X402Version != Version:
		return nil, &refusal{reason: ReasonVersion}
	case p.Scheme != SchemeExact || req.Scheme != SchemeExact:
		return nil, &refusal{reason: ReasonScheme}
	case p.Network != req.Network:
		return nil, &refusal{reason: ReasonNetwork}
	}
	a, err := parseExact(&p.Payload)
	if err != nil {
		return nil, &refusal{reason: ReasonPayload}
	}
	payer := a.from.Hex()
	d, err := domainOf(req)
	if err != nil {
		return nil, &refusal{reason: ReasonRequirements, payer: payer}
	}
	if !f.knows(d) {
		return nil, &refusal{reason: ReasonRequirements, payer: payer}
	}
	if who, err := a.signer(d); err != nil || who != a.from {
		return nil, &refusal{reason: f.whySignatureFails(a, d), payer: payer}
	}
	if to, err := evm.ParseAddress(req.PayTo); err != nil || to != a.to {
		return nil, &refusal{reason: ReasonRecipient, payer: payer}
	}
	want, err := evm.ParseInt(req.MaxAmountRequired)
	if err != nil || want.Sign() <= 0 {
		return nil, &refusal{reason: ReasonRequirements, payer: payer}
	}
	if a.value.Cmp(want) < 0 {
		return nil, &refusal{reason: ReasonValue, payer: payer}
	}
	now := f.now().Unix()
	if a.validAfter.Cmp(big.NewInt(now)) > 0 {
		return nil, &refusal{reason: ReasonValidAfter, payer: payer}
	}
	if a.validBefore.Cmp(big.NewInt(now+int64(f.minValidity/time.Second))) < 0 {
		return nil, &refusal{reason: ReasonValidBefore, payer: payer}
	}
	return &checked{a: a, d: d, req: req}, nil
}

// knows reports whether d is the domain of one of the facilitator's assets: the same chain,
// contract, name and version.
func (f *LocalFacilitator) knows(d domain) bool {
	for _, la := range f.assets {
		if la.d.chainID.Cmp(d.chainID) == 0 && la.d.contract == d.contract && la.d.name == d.name && la.d.version == d.version {
			return true
		}
	}
	return false
}

// whySignatureFails tells a signature made for another network or token from a bad one: it
// tries the domains of the facilitator's other assets.
func (f *LocalFacilitator) whySignatureFails(a *auth, d domain) string {
	for _, la := range f.assets {
		if la.d == d || (la.d.chainID.Cmp(d.chainID) == 0 && la.d.contract == d.contract) {
			continue
		}
		if who, err := a.signer(la.d); err == nil && who == a.from {
			if la.d.chainID.Cmp(d.chainID) != 0 {
				return ReasonNetwork
			}
			return ReasonAsset
		}
	}
	return ReasonSignature
}

func (c *checked) nonceKey() nonceKey {
	return nonceKey{chain: c.d.chainID.String(), contract: c.d.contract, from: c.a.from, nonce: c.a.nonce}
}

func (c *checked) account(who evm.Address) acctKey {
	return acctKey{chain: c.d.chainID.String(), contract: c.d.contract, who: who}
}

// stateLocked checks the nonce and the balance; f.mu is held.
func (f *LocalFacilitator) stateLocked(c *checked) string {
	if _, used := f.used[c.nonceKey()]; used {
		return ReasonNonce
	}
	if f.ledger {
		if b := f.balances[c.account(c.a.from)]; b == nil || b.Cmp(c.a.value) < 0 {
			return ReasonInsufficientFunds
		}
	}
	return ""
}

// Verify checks p against req as the "exact" scheme requires. It never returns an error.
func (f *LocalFacilitator) Verify(_ context.Context, p *Payload, req *Requirements) (*VerifyResponse, error) {
	c, r := f.check(p, req)
	if r != nil {
		return &VerifyResponse{InvalidReason: r.reason, Payer: r.payer}, nil
	}
	f.mu.Lock()
	reason := f.stateLocked(c)
	f.mu.Unlock()
	if reason != "" {
		return &VerifyResponse{InvalidReason: reason, Payer: c.a.from.Hex()}, nil
	}
	return &VerifyResponse{IsValid: true, Payer: c.a.from.Hex()}, nil
}

// Settle verifies p again and, if it passes, records its nonce as used and (with Ledger) moves
// the value; the transaction is a hash of the authorization. It never returns an error.
func (f *LocalFacilitator) Settle(_ context.Context, p *Payload, req *Requirements) (*SettleResponse, error) {
	network := ""
	if req != nil {
		network = req.Network
	}
	c, r := f.check(p, req)
	if r != nil {
		return &SettleResponse{ErrorReason: r.reason, Network: network, Payer: r.payer}, nil
	}
	payer := c.a.from.Hex()
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if reason := f.stateLocked(c); reason != "" {
		return &SettleResponse{ErrorReason: reason, Network: network, Payer: payer}, nil
	}
	f.pruneLocked(now)
	f.used[c.nonceKey()] = c.a.validBefore.Int64()
	if f.ledger {
		from, to := c.account(c.a.from), c.account(c.a.to)
		f.balances[from].Sub(f.balances[from], c.a.value)
		if f.balances[to] == nil {
			f.balances[to] = new(big.Int)
		}
		f.balances[to].Add(f.balances[to], c.a.value)
	}
	f.txs++
	tx := evm.Keccak256(c.d.chainID.Bytes(), c.d.contract[:], c.a.from[:], c.a.nonce[:])
	return &SettleResponse{Success: true, Transaction: "0x" + hex.EncodeToString(tx[:]), Network: network, Payer: payer}, nil
}

// pruneLocked forgets the nonces of expired authorizations (a replay of one fails on its
// validBefore), at most once a minute; f.mu is held.
func (f *LocalFacilitator) pruneLocked(now time.Time) {
	if now.Sub(f.pruned) < time.Minute {
		return
	}
	f.pruned = now
	for k, until := range f.used {
		if until < now.Unix() {
			delete(f.used, k)
		}
	}
}

// Settled returns how many payments it settled.
func (f *LocalFacilitator) Settled() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.txs
}

// ServeHTTP serves the facilitator API: POST /verify and POST /settle (a JSON body
// {"x402Version", "paymentPayload", "paymentRequirements"}, read strictly, at most 64 KiB),
// GET /supported. Mount it under any prefix with http.StripPrefix.
func (f *LocalFacilitator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/supported":
		type kind struct {
			X402Version int    `json:"x402Version"`
			Scheme      string `json:"scheme"`
			Network     string `json:"network"`
		}
		var kinds []kind
		seen := map[string]bool{}
		for _, a := range f.assets {
			if !seen[a.Network] {
				seen[a.Network] = true
				kinds = append(kinds, kind{Version, SchemeExact, a.Network})
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"kinds": kinds})
	case r.Method == http.MethodPost && (r.URL.Path == "/verify" || r.URL.Path == "/settle"):
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFacilitatorBytes))
		var req facilitatorRequest
		if err == nil {
			err = strictjson.Unmarshal(body, &req)
		}
		if err != nil || req.PaymentPayload == nil || req.PaymentRequirements == nil {
			reason := ReasonPayload
			if r.URL.Path == "/verify" {
				writeJSON(w, http.StatusBadRequest, VerifyResponse{InvalidReason: reason})
			} else {
				writeJSON(w, http.StatusBadRequest, SettleResponse{ErrorReason: reason})
			}
			return
		}
		if r.URL.Path == "/verify" {
			resp, _ := f.Verify(r.Context(), req.PaymentPayload, req.PaymentRequirements)
			writeJSON(w, http.StatusOK, resp)
		} else {
			resp, _ := f.Settle(r.Context(), req.PaymentPayload, req.PaymentRequirements)
			writeJSON(w, http.StatusOK, resp)
		}
	default:
		w.Header().Set("Allow", "GET /supported, POST /verify, POST /settle")
		http.Error(w, strings.TrimSpace("not found"), http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
