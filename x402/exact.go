package x402

// The "exact" scheme on EVM: an EIP-3009 TransferWithAuthorization signed as EIP-712 typed
// data under the token's domain.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/x402/evm"
)

var transferTypes = evm.Types{
	"TransferWithAuthorization": {
		{Name: "from", Type: "address"}, {Name: "to", Type: "address"}, {Name: "value", Type: "uint256"},
		{Name: "validAfter", Type: "uint256"}, {Name: "validBefore", Type: "uint256"}, {Name: "nonce", Type: "bytes32"},
	},
}

// domain is the EIP-712 domain of a token: what a signature is bound to.
type domain struct {
	chainID       *big.Int
	contract      evm.Address
	name, version string
}

// domainOf reads the domain the requirements name: the network's chain, the asset, and the
// name and version in Extra.
func domainOf(req *Requirements) (domain, error) {
	var d domain
	id, err := ChainID(req.Network)
	if err != nil {
		return d, err
	}
	a, err := evm.ParseAddress(req.Asset)
	if err != nil {
		return d, fmt.Errorf("x402: asset: %w", err)
	}
	name, _ := req.Extra["name"].(string)
	version, _ := req.Extra["version"].(string)
	if name == "" || version == "" {
		return d, errors.New(`x402: the requirements' extra lacks the token's EIP-712 "name" and "version"`)
	}
	return domain{chainID: id, contract: a, name: name, version: version}, nil
}

// auth is an Authorization read and checked for form.
type auth struct {
	from, to                       evm.Address
	value, validAfter, validBefore *big.Int
	nonce                          [32]byte
	sig                            []byte
}

// parseExact reads the exact payload's authorization and signature.
func parseExact(p *ExactPayload) (*auth, error) {
	a := &auth{}
	var err error
	if a.from, err = evm.ParseAddress(p.Authorization.From); err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	if a.to, err = evm.ParseAddress(p.Authorization.To); err != nil {
		return nil, fmt.Errorf("to: %w", err)
	}
	for _, f := range []struct {
		name string
		s    string
		dst  **big.Int
	}{{"value", p.Authorization.Value, &a.value}, {"validAfter", p.Authorization.ValidAfter, &a.validAfter}, {"validBefore", p.Authorization.ValidBefore, &a.validBefore}} {
		n, err := evm.ParseInt(f.s)
		if err != nil || n.Sign() < 0 || n.BitLen() > 256 {
			return nil, fmt.Errorf("%s: %q is not a uint256", f.name, f.s)
		}
		*f.dst = n
	}
	nonce, err := evm.ParseInt(p.Authorization.Nonce)
	if err != nil || nonce.Sign() < 0 || nonce.BitLen() > 256 {
		return nil, fmt.Errorf("nonce: %q is not 32 bytes", p.Authorization.Nonce)
	}
	nonce.FillBytes(a.nonce[:])
	s := p.Signature
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return nil, errors.New("signature: want 0x-hex")
	}
	if a.sig, err = hex.DecodeString(s[2:]); err != nil || len(a.sig) != 65 {
		return nil, errors.New("signature: want 65 bytes of 0x-hex")
	}
	return a, nil
}

// typedData is what the payer signs under d.
func (a *auth) typedData(d domain) *evm.TypedData {
	return &evm.TypedData{
		Types:       transferTypes,
		PrimaryType: "TransferWithAuthorization",
		Domain:      map[string]any{"name": d.name, "version": d.version, "chainId": d.chainID, "verifyingContract": d.contract},
		Message: map[string]any{
			"from": a.from, "to": a.to, "value": a.value,
			"validAfter": a.validAfter, "validBefore": a.validBefore, "nonce": a.nonce,
		},
	}
}

// signer recovers who signed a under d.
func (a *auth) signer(d domain) (evm.Address, error) {
	digest, err := a.typedData(d).Hash()
	if err != nil {
		return evm.Address{}, err
	}
	return evm.Recover(digest, a.sig)
}

// SignExact signs a payment of req.MaxAmountRequired to req.PayTo with key, valid from
// validAfter to validBefore, with nonce (nil: 32 random bytes): the PaymentPayload a client
// submits.
func SignExact(key *evm.PrivateKey, req *Requirements, validAfter, validBefore time.Time, nonce *[32]byte) (*Payload, error) {
	if req.Scheme != SchemeExact {
		return nil, fmt.Errorf("x402: scheme %q, not %q", req.Scheme, SchemeExact)
	}
	d, err := domainOf(req)
	if err != nil {
		return nil, err
	}
	to, err := evm.ParseAddress(req.PayTo)
	if err != nil {
		return nil, fmt.Errorf("x402: payTo: %w", err)
	}
	value, err := evm.ParseInt(req.MaxAmountRequired)
	if err != nil || value.Sign() <= 0 || value.BitLen() > 256 {
		return nil, fmt.Errorf("x402: maxAmountRequired %q is not a positive amount", req.MaxAmountRequired)
	}
	a := &auth{from: key.Address(), to: to, value: value,
		validAfter: big.NewInt(validAfter.Unix()), validBefore: big.NewInt(validBefore.Unix())}
	if nonce != nil {
		a.nonce = *nonce
	} else if _, err := rand.Read(a.nonce[:]); err != nil {
		return nil, err
	}
	digest, err := a.typedData(d).Hash()
	if err != nil {
		return nil, err
	}
	return &Payload{
		X402Version: Version, Scheme: SchemeExact, Network: req.Network,
		Payload: ExactPayload{
			Signature: "0x" + hex.EncodeToString(key.Sign(digest)),
			Authorization: Authorization{
				From: a.from.Hex(), To: a.to.Hex(), Value: value.String(),
				ValidAfter:  strconv.FormatInt(validAfter.Unix(), 10),
				ValidBefore: strconv.FormatInt(validBefore.Unix(), 10),
				Nonce:       "0x" + hex.EncodeToString(a.nonce[:]),
			},
		},
	}, nil
}
