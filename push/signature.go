package push

// What a delivery carries to be verified.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/go-jose/go-jose/v4"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Headers of a delivery, besides Authorization and the notification token.
const (
	// SignatureHeader carries a compact JWS (ES256) whose payload is the Claims.
	SignatureHeader = "X-A2A-Push-Signature"
	// DeliveryHeader carries the delivery ID (also the JWS's jti): the same on every attempt
	// of one delivery, so receivers can drop repeats.
	DeliveryHeader = "X-A2A-Push-Delivery"
	// TokenHeader carries the push config's token, as the A2A specification says.
	TokenHeader = "X-A2A-Notification-Token"
)

// signatureType is the JWS "typ" of delivery signatures.
const signatureType jose.ContentType = "a2a-push+jwt"

// Claims are the signed payload of a delivery's signature.
type Claims struct {
	ID         string     `json:"jti"`         // delivery ID
	IssuedAt   int64      `json:"iat"`         // when this attempt was sent (Unix seconds)
	Audience   string     `json:"aud"`         // the URL it was sent to
	TaskID     a2a.TaskID `json:"task_id"`     // the task
	Seq        int64      `json:"seq"`         // the event's sequence number in the task's log
	BodySHA256 string     `json:"body_sha256"` // base64url (unpadded) SHA-256 of the body
}

// deliveryID is the stable ID of the delivery of event seq of a task to one push config.
func deliveryID(task a2a.TaskID, config string, seq int64) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d", task, config, seq)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// sign returns the compact JWS over c.
func (k *Key) sign(c *Claims) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	jws, err := k.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("push: sign: %w", err)
	}
	return jws.CompactSerialize()
}
