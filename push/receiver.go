package push

// The receiving side: verifying deliveries.

// Concurrency model: Verifier.mu guards the cached key set and the seen delivery IDs. It is
// not held while fetching the JWKS (fetchMu serializes fetches) nor while a handler runs.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Errors of Verifier.Verify.
var (
	// ErrSignature: the delivery is not signed by a key of the JWKS, or not over this body.
	ErrSignature = errors.New("push: invalid signature")
	// ErrStale: the signature is older (or newer) than VerifierOptions.MaxAge allows.
	ErrStale = errors.New("push: stale delivery")
	// ErrDuplicate: a delivery with this ID was already accepted.
	ErrDuplicate = errors.New("push: duplicate delivery")
)

// VerifierOptions configure a Verifier. Nil means the documented defaults.
type VerifierOptions struct {
	// Audience, if set, is the URL the receiver was registered with: deliveries signed for
	// another URL are refused. Empty: not checked.
	Audience string
	// MaxAge is how far a signature's time may be from now. Zero means 5 minutes. Delivery
	// IDs are remembered for twice as long, to drop repeats.
	MaxAge time.Duration
	// Client fetches the JWKS. Nil means a client with a 10s timeout.
	Client *http.Client
	// MaxBody bounds the body read. Zero means 4 MiB.
	MaxBody int64
}

// Notification is a verified delivery.
type Notification struct {
	Claims
	Event *a2a.StreamResponse
}

// Verifier checks deliveries signed by a server whose JWKS is at a URL (the server's base URL
// and JWKSPath). It is safe for concurrent use.
type Verifier struct {
	jwksURL string
	opts    VerifierOptions

	fetchMu sync.Mutex // serializes JWKS fetches
	mu      sync.Mutex
	keys    *jose.JSONWebKeySet
	fetched time.Time
	seen    map[string]time.Time // accepted delivery IDs -> when
}

// NewVerifier returns a verifier of deliveries signed with the keys published at jwksURL.
func NewVerifier(jwksURL string, opts *VerifierOptions) *Verifier {
	v := &Verifier{jwksURL: jwksURL, seen: map[string]time.Time{}}
	if opts != nil {
		v.opts = *opts
	}
	if v.opts.MaxAge <= 0 {
		v.opts.MaxAge = 5 * time.Minute
	}
	if v.opts.Client == nil {
		v.opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if v.opts.MaxBody <= 0 {
		v.opts.MaxBody = 4 << 20
	}
	return v
}

// Verify reads r's body and checks its signature (a key of the JWKS, over this body), its
// freshness and, when set, its audience, then that its ID was not accepted before; it records
// the ID as accepted. Use Forget if handling the notification fails after all, so that the
// sender's retry is accepted.
func (v *Verifier) Verify(r *http.Request) (*Notification, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, v.opts.MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("push: read body: %w", err)
	}
	if int64(len(body)) > v.opts.MaxBody {
		return nil, fmt.Errorf("push: body over %d bytes", v.opts.MaxBody)
	}
	jws, err := jose.ParseSignedCompact(r.Header.Get(SignatureHeader), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: %v", ErrSignature, err)
	}
	key, err := v.key(r.Context(), jws.Signatures[0].Header.KeyID)
	if err != nil {
		return nil, err
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSignature, err)
	}
	var n Notification
	if err := json.Unmarshal(payload, &n.Claims); err != nil {
		return nil, fmt.Errorf("%w: claims: %v", ErrSignature, err)
	}
	if n.BodySHA256 != bodyHash(body) {
		return nil, fmt.Errorf("%w: the body is not the one signed", ErrSignature)
	}
	if n.ID == "" || r.Header.Get(DeliveryHeader) != n.ID {
		return nil, fmt.Errorf("%w: delivery ID header does not match", ErrSignature)
	}
	if v.opts.Audience != "" && n.Audience != v.opts.Audience {
		return nil, fmt.Errorf("%w: signed for %q", ErrSignature, n.Audience)
	}
	now := time.Now()
	if age := now.Sub(time.Unix(n.IssuedAt, 0)); age > v.opts.MaxAge || age < -v.opts.MaxAge {
		return nil, fmt.Errorf("%w: signed %s ago", ErrStale, age.Round(time.Second))
	}
	n.Event = new(a2a.StreamResponse)
	if err := json.Unmarshal(body, n.Event); err != nil {
		return nil, fmt.Errorf("push: body: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for id, t := range v.seen {
		if now.Sub(t) > 2*v.opts.MaxAge {
			delete(v.seen, id)
		}
	}
	if _, dup := v.seen[n.ID]; dup {
		return &n, ErrDuplicate
	}
	v.seen[n.ID] = now
	return &n, nil
}

// Forget drops an accepted delivery ID, so that a repeat of it is accepted again.
func (v *Verifier) Forget(id string) {
	v.mu.Lock()
	delete(v.seen, id)
	v.mu.Unlock()
}

// key returns the public key kid, fetching the JWKS when it is not known (at most every few
// seconds, so that forged kids cannot make us hammer the server).
func (v *Verifier) key(ctx context.Context, kid string) (*jose.JSONWebKey, error) {
	lookup := func() *jose.JSONWebKey {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.keys != nil {
			if ks := v.keys.Key(kid); len(ks) > 0 {
				return &ks[0]
			}
		}
		return nil
	}
	if k := lookup(); k != nil {
		return k, nil
	}
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()
	if k := lookup(); k != nil {
		return k, nil
	}
	v.mu.Lock()
	recent := time.Since(v.fetched) < 5*time.Second
	v.mu.Unlock()
	if !recent {
		if err := v.fetch(ctx); err != nil {
			return nil, err
		}
	}
	if k := lookup(); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("%w: unknown key %q", ErrSignature, kid)
}

func (v *Verifier) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.jwksURL, nil)
	if err != nil {
		return fmt.Errorf("push: jwks: %w", err)
	}
	resp, err := v.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("push: jwks: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("push: jwks: %s: %v", resp.Status, err)
	}
	var ks jose.JSONWebKeySet
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&ks); err != nil {
		return fmt.Errorf("push: jwks: %w", err)
	}
	v.mu.Lock()
	v.keys, v.fetched = &ks, time.Now()
	v.mu.Unlock()
	return nil
}

// NewReceiver returns an http.Handler for a push URL: it verifies each delivery (v.Verify) and
// passes it to handle. It answers 204 when handle succeeds or the delivery is a repeat (so the
// sender stops), 401 when verification fails, and 500 when handle fails (the sender retries).
func NewReceiver(v *Verifier, handle func(ctx context.Context, n *Notification) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		n, err := v.Verify(r)
		switch {
		case errors.Is(err, ErrDuplicate):
			w.WriteHeader(http.StatusNoContent)
			return
		case err != nil:
			http.Error(w, "invalid delivery", http.StatusUnauthorized)
			return
		}
		if err := handle(r.Context(), n); err != nil {
			v.Forget(n.ID)
			http.Error(w, "not handled", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
