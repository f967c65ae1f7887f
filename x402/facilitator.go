package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Facilitator verifies and settles payments: an x402 facilitator's HTTP API
// (NewFacilitatorClient) or the local one (NewLocalFacilitator). An error means the facilitator
// could not answer (unreachable, broken); a refused payment is an answer, with IsValid or
// Success false and the reason.
type Facilitator interface {
	Verify(ctx context.Context, p *Payload, req *Requirements) (*VerifyResponse, error)
	Settle(ctx context.Context, p *Payload, req *Requirements) (*SettleResponse, error)
}

// Reasons a facilitator gives (invalidReason, errorReason): x402's, and ours where x402 has
// none (marked).
const (
	ReasonInsufficientFunds = "insufficient_funds"
	ReasonValidAfter        = "invalid_exact_evm_payload_authorization_valid_after"
	ReasonValidBefore       = "invalid_exact_evm_payload_authorization_valid_before"
	ReasonValue             = "invalid_exact_evm_payload_authorization_value"
	ReasonSignature         = "invalid_exact_evm_payload_signature"
	ReasonRecipient         = "invalid_exact_evm_payload_recipient_mismatch"
	ReasonNetwork           = "invalid_network"
	ReasonPayload           = "invalid_payload"
	ReasonRequirements      = "invalid_payment_requirements"
	ReasonScheme            = "unsupported_scheme"
	ReasonVersion           = "invalid_x402_version"
	ReasonUnexpectedVerify  = "unexpected_verify_error"
	ReasonUnexpectedSettle  = "unexpected_settle_error"
	// ReasonNonce (ours): the authorization's nonce was already used.
	ReasonNonce = "invalid_exact_evm_payload_authorization_nonce_used"
	// ReasonAsset (ours): the signature is for another token contract.
	ReasonAsset = "invalid_exact_evm_payload_asset_mismatch"
)

// The x402.payment.error codes (spec §9.1, and ours where it lacks one).
const (
	CodeInsufficientFunds = "INSUFFICIENT_FUNDS"
	CodeInvalidSignature  = "INVALID_SIGNATURE"
	CodeExpired           = "EXPIRED_PAYMENT"
	CodeDuplicateNonce    = "DUPLICATE_NONCE"
	CodeNetworkMismatch   = "NETWORK_MISMATCH"
	CodeInvalidAmount     = "INVALID_AMOUNT"
	CodeSettlementFailed  = "SETTLEMENT_FAILED"
	CodeAssetMismatch     = "ASSET_MISMATCH"
	CodeRecipientMismatch = "RECIPIENT_MISMATCH"
	CodeNotYetValid       = "PAYMENT_NOT_YET_VALID"
	CodeInvalidPayload    = "INVALID_PAYLOAD"
)

// codes maps a facilitator's reason to the x402.payment.error code: one table.
var codes = map[string]string{
	ReasonInsufficientFunds: CodeInsufficientFunds,
	ReasonValidAfter:        CodeNotYetValid,
	ReasonValidBefore:       CodeExpired,
	ReasonValue:             CodeInvalidAmount,
	ReasonSignature:         CodeInvalidSignature,
	ReasonRecipient:         CodeRecipientMismatch,
	ReasonNetwork:           CodeNetworkMismatch,
	ReasonPayload:           CodeInvalidPayload,
	ReasonRequirements:      CodeInvalidPayload,
	ReasonScheme:            CodeInvalidPayload,
	ReasonVersion:           CodeInvalidPayload,
	ReasonNonce:             CodeDuplicateNonce,
	ReasonAsset:             CodeAssetMismatch,
}

// ErrorCode returns the x402.payment.error code for a facilitator's reason;
// SETTLEMENT_FAILED for one it does not know.
func ErrorCode(reason string) string {
	if c, ok := codes[reason]; ok {
		return c
	}
	return CodeSettlementFailed
}

// facilitatorRequest is the body of /verify and /settle.
type facilitatorRequest struct {
	X402Version         int           `json:"x402Version"`
	PaymentPayload      *Payload      `json:"paymentPayload"`
	PaymentRequirements *Requirements `json:"paymentRequirements"`
}

// maxFacilitatorBytes bounds the bodies of facilitator requests and answers.
const maxFacilitatorBytes = 64 << 10

// FacilitatorClient calls a facilitator's HTTP API.
type FacilitatorClient struct {
	base   string
	client *http.Client
	header http.Header
}

// FacilitatorOptions configure NewFacilitatorClient. Nil means the defaults.
type FacilitatorOptions struct {
	// HTTPClient makes the requests. Nil: a client with a 30-second timeout.
	HTTPClient *http.Client
	// Header is sent with every request (an API key the facilitator wants). Zero: none.
	Header http.Header
}

// NewFacilitatorClient returns a Facilitator that POSTs to baseURL+"/verify" and
// baseURL+"/settle". opts may be nil.
func NewFacilitatorClient(baseURL string, opts *FacilitatorOptions) *FacilitatorClient {
	c := &FacilitatorClient{base: strings.TrimSuffix(baseURL, "/")}
	if opts != nil {
		c.client, c.header = opts.HTTPClient, opts.Header
	}
	if c.client == nil {
		c.client = &http.Client{Timeout: 30 * time.Second}
	}
	return c
}

// Verify asks the facilitator whether p pays req.
func (c *FacilitatorClient) Verify(ctx context.Context, p *Payload, req *Requirements) (*VerifyResponse, error) {
	var out VerifyResponse
	if err := c.post(ctx, "/verify", p, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Settle asks the facilitator to settle p.
func (c *FacilitatorClient) Settle(ctx context.Context, p *Payload, req *Requirements) (*SettleResponse, error) {
	var out SettleResponse
	if err := c.post(ctx, "/settle", p, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *FacilitatorClient) post(ctx context.Context, path string, p *Payload, req *Requirements, out any) error {
	body, err := json.Marshal(facilitatorRequest{X402Version: Version, PaymentPayload: p, PaymentRequirements: req})
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("x402: facilitator: %w", err)
	}
	for k, v := range c.header {
		r.Header[k] = v
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(r)
	if err != nil {
		return fmt.Errorf("x402: facilitator %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxFacilitatorBytes+1))
	if err != nil {
		return fmt.Errorf("x402: facilitator %s: %w", path, err)
	}
	if len(b) > maxFacilitatorBytes {
		return fmt.Errorf("x402: facilitator %s: answer over %d bytes", path, maxFacilitatorBytes)
	}
	// A refusal may come with a 4xx status and the usual body; anything else is a failure.
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("x402: facilitator %s: %s: not an x402 answer: %v", path, resp.Status, err)
	}
	if resp.StatusCode >= 500 {
		return fmt.Errorf("x402: facilitator %s: %s", path, resp.Status)
	}
	return nil
}
