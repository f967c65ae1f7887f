package registry

// Fetching and checking cards, and the checker that does it periodically.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/internal/jcs"
)

// maxJKUs bounds the key sets one card's signatures make the registry fetch.
const maxJKUs = 4

// maxJWKSBytes bounds a key set.
const maxJWKSBytes = 64 << 10

// check fetches the card at cardURL and checks it: a card (strict JSON, a name), whose
// signatures, if any, verify. prev is the signature state the agent had (a card that was
// verified may not lose its signatures). The fetch takes a slot.
func (r *Registry) check(ctx context.Context, cardURL string, prev Signature) (*checkedAgent, error) {
	if err := r.acquire(ctx); err != nil {
		return nil, err
	}
	defer r.release()
	body, err := r.get(ctx, cardURL, r.o.MaxCardBytes, "application/json")
	if err != nil {
		return nil, refusal(ErrUnreachable, "fetching %s: %s", cardURL, err)
	}
	canon, err := jcs.Canonicalize(body)
	if err != nil {
		return nil, refusal(ErrUnreachable, "%s is not a card: %s", cardURL, strings.TrimPrefix(err.Error(), "jcs: "))
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, refusal(ErrUnreachable, "%s is not a card: %v", cardURL, err)
	}
	if strings.TrimSpace(card.Name) == "" {
		return nil, refusal(ErrUnreachable, "%s is not a card: it has no name", cardURL)
	}
	a := &checkedAgent{id: ID(cardURL), url: cardURL, card: &card, cardJSON: canon, signature: SignatureUnsigned}
	if len(card.Signatures) == 0 {
		switch {
		case prev == SignatureVerified:
			return nil, refusal(ErrSignature, "the card was signed and no longer is")
		case r.o.RequireSigned:
			return nil, refusal(ErrUnsigned, "the registry lists signed cards only")
		}
		return a, nil
	}
	keys := r.keys(ctx, cardURL, &card)
	if err := auth.VerifyCard(&card, keys); err != nil {
		return nil, refusal(ErrSignature, "%s", strings.TrimPrefix(err.Error(), "auth: "))
	}
	a.signature = SignatureVerified
	return a, nil
}

// keys are the keys trusted for a card: the operator's, and those of the key sets its
// signatures name (jku) on the card's own origin.
func (r *Registry) keys(ctx context.Context, cardURL string, card *a2a.AgentCard) *jose.JSONWebKeySet {
	set := &jose.JSONWebKeySet{}
	if r.o.TrustedKeys != nil {
		set.Keys = append(set.Keys, r.o.TrustedKeys.Keys...)
	}
	origin := originOf(cardURL)
	seen := map[string]bool{}
	for _, s := range card.Signatures {
		jku := jkuOf(s.Protected)
		if jku == "" || seen[jku] || len(seen) == maxJKUs || originOf(jku) != origin {
			continue
		}
		seen[jku] = true
		body, err := r.get(ctx, jku, maxJWKSBytes, "application/json")
		if err != nil {
			continue
		}
		var ks jose.JSONWebKeySet
		if json.Unmarshal(body, &ks) == nil {
			set.Keys = append(set.Keys, ks.Keys...)
		}
	}
	return set
}

// jkuOf reads the jku of a JWS protected header, or "".
func jkuOf(protected string) string {
	b, err := base64.RawURLEncoding.DecodeString(protected)
	if err != nil || len(b) > 4096 {
		return ""
	}
	var h struct {
		JKU string `json:"jku"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.JKU
}

// originOf is scheme://host[:port] of an absolute URL, host lower-cased, default port dropped
// (what CardURL makes of it); "" for anything else.
func originOf(raw string) string {
	c, err := CardURL(raw)
	if err != nil {
		return ""
	}
	u, _ := url.Parse(c)
	return u.Scheme + "://" + u.Host
}

// get fetches u through the SSRF guard, without redirects, at most limit bytes.
func (r *Registry) get(ctx context.Context, u string, limit int64, accept string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "a2awebcap-registry")
	resp, err := r.client.Do(req)
	if err != nil {
		if m := blockedMessage(err); m != "" {
			return nil, errors.New(m)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return nil, fmt.Errorf("%s (redirects are not followed: register the URL the card is served at)", resp.Status)
		}
		return nil, errors.New(resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return body, nil
}

// checker checks due agents every Tick until Close.
func (r *Registry) checker() {
	defer r.wg.Done()
	t := time.NewTicker(r.o.Tick)
	defer t.Stop()
	for {
		if _, err := r.CheckDue(r.ctx); err != nil && r.ctx.Err() == nil {
			r.o.Logger.Warn("registry: checking agents", "err", err)
		}
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// CheckDue checks the agents whose check is due now (the checker calls it every Tick), at most
// Concurrency at once, and returns how many it checked.
func (r *Registry) CheckDue(ctx context.Context) (int, error) {
	checked := 0
	for {
		batch, err := r.st.claimDue(ctx, r.o.Now(), 2*r.o.FetchTimeout+time.Minute, 4*r.o.Concurrency)
		if err != nil || len(batch) == 0 {
			return checked, err
		}
		done := make(chan struct{}, len(batch))
		for _, d := range batch {
			go func() {
				defer func() { done <- struct{}{} }()
				r.recheck(ctx, d)
			}()
		}
		for range batch {
			<-done
		}
		checked += len(batch)
		if ctx.Err() != nil {
			return checked, context.Cause(ctx)
		}
	}
}

// recheck checks one claimed agent and records the result.
func (r *Registry) recheck(ctx context.Context, d due) {
	a, err := r.check(ctx, d.url, d.signature)
	if ctx.Err() != nil {
		return // the claim expires; a later pass checks it
	}
	now := r.o.Now()
	if err == nil {
		err = r.st.checkedGood(ctx, a, now, r.next(now))
	} else {
		state := StateUnreachable
		var rerr *Error
		if errors.As(err, &rerr) && rerr.Reason != ErrUnreachable.Reason {
			state = StateInvalid
		} else if errors.As(err, &rerr) && strings.Contains(rerr.Message, "is not a card") {
			state = StateInvalid
		}
		msg := err.Error()
		if rerr != nil {
			msg = rerr.Message
		}
		r.o.Logger.Info("registry: agent check failed", "id", d.id, "url", d.url, "state", state, "err", msg)
		err = r.st.checkedBad(ctx, d.id, state, msg, now, r.next(now))
	}
	if err != nil && ctx.Err() == nil {
		r.o.Logger.Warn("registry: recording a check", "id", d.id, "err", err)
	}
}
