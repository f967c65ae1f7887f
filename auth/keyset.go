package auth

// Concurrency: a keySet is shared by every request a JWT scheme checks. mu guards all fields
// below it. One request at a time fetches (inflight is its done channel); the others wait for
// it, or for their context. The fetch runs with mu released.

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// errUnknownKey: the token names a key the issuer's key set does not hold.
var errUnknownKey = errors.New("auth: unknown signing key")

// keySet is a JSON Web Key Set (RFC 7517) fetched over HTTP and cached for ttl. A token
// signed by a key it does not know refetches it — at most once per minRefresh, so tokens with
// made-up key IDs cannot make the server hammer the issuer — which is how key rotation is
// picked up before the ttl runs out.
type keySet struct {
	url        string
	client     *http.Client
	ttl        time.Duration
	minRefresh time.Duration

	mu       sync.Mutex
	keys     []jose.JSONWebKey // public signing keys only
	fetched  time.Time         // the last fetch attempt; zero: never
	expires  time.Time         // when keys must be fetched again
	err      error             // the last fetch's error
	inflight chan struct{}     // closed when the running fetch ends; nil: none runs
}

// lookup returns the keys that may have signed a token with key ID kid ("" — any key).
func (k *keySet) lookup(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	if k.needFetch(kid) {
		if ch := k.inflight; ch != nil {
			k.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			k.mu.Lock()
		} else {
			ch := make(chan struct{})
			k.inflight = ch
			k.mu.Unlock()
			// Not the caller's cancellation: the keys serve every waiting request.
			keys, err := k.fetch(context.WithoutCancel(ctx))
			k.mu.Lock()
			k.store(keys, err)
			k.inflight = nil
			close(ch)
		}
	}
	defer k.mu.Unlock()
	found := k.match(kid)
	if len(found) == 0 {
		if len(k.keys) == 0 && k.err != nil {
			return nil, k.err
		}
		return nil, errUnknownKey
	}
	return found, nil
}

// needFetch reports whether the set is missing, expired, or does not know kid and may be
// refetched. k.mu is held.
func (k *keySet) needFetch(kid string) bool {
	now := time.Now()
	switch {
	case k.fetched.IsZero(), !now.Before(k.expires):
		return true
	case len(k.match(kid)) == 0:
		return now.Sub(k.fetched) >= k.minRefresh
	}
	return false
}

// store records a fetch. A failed fetch keeps the keys held so far (the issuer being down
// does not lock every caller out) and is retried after minRefresh. k.mu is held.
func (k *keySet) store(keys []jose.JSONWebKey, err error) {
	now := time.Now()
	k.fetched, k.err = now, err
	if err != nil {
		k.expires = now.Add(k.minRefresh)
		return
	}
	k.keys, k.expires = keys, now.Add(k.ttl)
}

// match returns the keys with ID kid, or all of them when kid is "". k.mu is held.
func (k *keySet) match(kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, key := range k.keys {
		if kid == "" || key.KeyID == kid {
			out = append(out, key)
		}
	}
	return out
}

// fetch gets the set and keeps its public signing keys. Symmetric ("oct") keys are dropped:
// a key published in a set is public, and an HMAC key anyone can read verifies anything.
func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	if _, err := getJSON(ctx, k.client, k.url, &set); err != nil {
		return nil, err
	}
	var keys []jose.JSONWebKey
	for _, key := range set.Keys {
		if !key.Valid() || !key.IsPublic() || key.Use == "enc" {
			continue
		}
		keys = append(keys, key.Public())
	}
	return keys, nil
}
