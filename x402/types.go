package x402

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/internal/strictjson"
)

// ExtensionURI is the URI of the A2A x402 Payments Extension v0.2, under which an agent card
// declares it and a client activates it (the A2A-Extensions service parameter).
const ExtensionURI = "https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2"

// Version is the x402 protocol version of the data structures (x402Version).
const Version = 1

// The metadata keys of the extension (spec §7).
const (
	KeyStatus   = "x402.payment.status"
	KeyRequired = "x402.payment.required"
	KeyPayload  = "x402.payment.payload"
	KeyReceipts = "x402.payment.receipts"
	KeyError    = "x402.payment.error"
)

// Status is a value of x402.payment.status.
type Status string

// The payment states (spec §7).
const (
	StatusRequired  Status = "payment-required"
	StatusSubmitted Status = "payment-submitted"
	StatusRejected  Status = "payment-rejected"
	StatusVerified  Status = "payment-verified"
	StatusCompleted Status = "payment-completed"
	StatusFailed    Status = "payment-failed"
)

// SchemeExact is the x402 "exact" scheme: an EIP-3009 transferWithAuthorization of an exact
// amount, signed as EIP-712 typed data.
const SchemeExact = "exact"

// Requirements is an x402 PaymentRequirements: one way to pay that a merchant accepts.
type Requirements struct {
	Scheme            string `json:"scheme"`
	Network           string `json:"network"`
	MaxAmountRequired string `json:"maxAmountRequired"` // atomic units of Asset, decimal
	Asset             string `json:"asset"`             // the token contract's address
	PayTo             string `json:"payTo"`
	Resource          string `json:"resource"`
	Description       string `json:"description"`
	MimeType          string `json:"mimeType,omitempty"`
	OutputSchema      any    `json:"outputSchema,omitempty"`
	MaxTimeoutSeconds int    `json:"maxTimeoutSeconds"`
	// Extra is scheme-specific: for "exact" on EVM, {"name": …, "version": …}, the token's
	// EIP-712 domain name and version.
	Extra map[string]any `json:"extra,omitempty"`
}

// PaymentRequired is an x402PaymentRequiredResponse: what a merchant asks for, under
// x402.payment.required.
type PaymentRequired struct {
	X402Version int            `json:"x402Version"`
	Error       string         `json:"error,omitempty"`
	Accepts     []Requirements `json:"accepts"`
}

// Payload is an x402 PaymentPayload: a signed payment, under x402.payment.payload.
type Payload struct {
	X402Version int          `json:"x402Version"`
	Scheme      string       `json:"scheme"`
	Network     string       `json:"network"`
	Payload     ExactPayload `json:"payload"`
}

// ExactPayload is the "exact" scheme's payload on EVM.
type ExactPayload struct {
	Signature     string        `json:"signature"` // 65 bytes, 0x-hex
	Authorization Authorization `json:"authorization"`
}

// Authorization is the EIP-3009 transferWithAuthorization the payer signed.
type Authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`       // atomic units
	ValidAfter  string `json:"validAfter"`  // Unix seconds
	ValidBefore string `json:"validBefore"` // Unix seconds
	Nonce       string `json:"nonce"`       // 32 bytes, 0x-hex
}

// VerifyResponse is a facilitator's answer to /verify.
type VerifyResponse struct {
	IsValid       bool   `json:"isValid"`
	InvalidReason string `json:"invalidReason,omitempty"`
	Payer         string `json:"payer,omitempty"`
}

// SettleResponse is a facilitator's answer to /settle, and a receipt in x402.payment.receipts.
type SettleResponse struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	Payer       string `json:"payer,omitempty"`
}

// Receipt is a SettleResponse as recorded in a task.
type Receipt = SettleResponse

// maxMetaBytes bounds the JSON of an x402 value read from message metadata.
const maxMetaBytes = 64 << 10

// ErrMalformed: an x402 value in metadata that is not what the spec describes.
var ErrMalformed = errors.New("x402: malformed payment data")

// StatusOf returns the x402.payment.status of a message's metadata, or "".
func StatusOf(m *a2a.Message) Status {
	if m == nil {
		return ""
	}
	s, _ := m.Metadata[KeyStatus].(string)
	return Status(s)
}

// RequiredOf reads the x402PaymentRequiredResponse of a task waiting for payment (standalone
// flow: its status message's metadata says "payment-required" and holds x402.payment.required).
// ok is false when the task is not waiting for payment.
func RequiredOf(t *a2a.Task) (pr *PaymentRequired, ok bool, err error) {
	if t == nil || t.Status.State != a2a.TaskStateInputRequired || StatusOf(t.Status.Message) != StatusRequired {
		return nil, false, nil
	}
	raw, present := t.Status.Message.Metadata[KeyRequired]
	if !present {
		return nil, true, fmt.Errorf("%w: %s without %s (an embedded flow, which this package does not read)", ErrMalformed, StatusRequired, KeyRequired)
	}
	pr = new(PaymentRequired)
	if err := fromMeta(raw, pr); err != nil {
		return nil, true, err
	}
	if pr.X402Version != Version || len(pr.Accepts) == 0 {
		return nil, true, fmt.Errorf("%w: x402Version %d with %d requirements", ErrMalformed, pr.X402Version, len(pr.Accepts))
	}
	return pr, true, nil
}

// PayloadOf reads the PaymentPayload a message submits (x402.payment.status
// "payment-submitted").
func PayloadOf(m *a2a.Message) (*Payload, error) {
	raw, ok := m.Metadata[KeyPayload]
	if !ok {
		return nil, fmt.Errorf("%w: %s without %s", ErrMalformed, StatusSubmitted, KeyPayload)
	}
	p := new(Payload)
	if err := fromMeta(raw, p); err != nil {
		return nil, err
	}
	return p, nil
}

// ReceiptsOf returns the receipts recorded in a task: those of its status message, else of
// the newest message of its history that has any.
func ReceiptsOf(t *a2a.Task) []Receipt {
	if t == nil {
		return nil
	}
	if r := receiptsOf(t.Status.Message); r != nil {
		return r
	}
	for i := len(t.History) - 1; i >= 0; i-- {
		if r := receiptsOf(t.History[i]); r != nil {
			return r
		}
	}
	return nil
}

func receiptsOf(m *a2a.Message) []Receipt {
	if m == nil || m.Role != a2a.MessageRoleAgent {
		return nil
	}
	raw, ok := m.Metadata[KeyReceipts]
	if !ok {
		return nil
	}
	var r []Receipt
	if fromMeta(raw, &r) != nil {
		return nil
	}
	return r
}

// fromMeta decodes a metadata value (as a2a's JSON decoding left it: maps, slices, strings,
// float64) into v strictly: keys spelled exactly, none unknown, none repeated, at most
// maxMetaBytes of JSON.
func fromMeta(raw any, v any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(b) > maxMetaBytes {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(b), maxMetaBytes)
	}
	if err := strictjson.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// toMeta turns v into the plain JSON value metadata holds (maps, slices, strings, numbers).
func toMeta(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // our own types always encode
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
