package push

// Concurrency model
//
//   - The Deliverer owns one goroutine (loop), started by New and waited for by Close. Each
//     round it claims a batch of due deliveries from the store and sends them concurrently,
//     one goroutine per delivery (at most Options.Workers), waiting for all before claiming
//     again. No lock is held while sending: the store's claim (a lease) is what keeps another
//     process, or a later round, from sending the same delivery meanwhile.
//   - Wake only signals a buffered channel; it never blocks.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/netguard"
	"github.com/a2awebcap/a2awebcap/store"
)

// Options configure a Deliverer. Nil means the documented defaults.
type Options struct {
	// Allow, AllowHosts, Deny, NAT64 and Resolver configure the SSRF guard every URL and
	// every dial goes through, as the netguard.Options fields of the same names do (New
	// panics where netguard.New does). All nil: public addresses only, resolved by
	// net.DefaultResolver.
	Allow      []netip.Prefix
	AllowHosts []string
	Deny       []netip.Prefix
	NAT64      []netip.Prefix
	Resolver   Resolver
	// Timeout bounds one attempt (connect, send, response). Zero means 10s.
	Timeout time.Duration
	// MaxAttempts is how many attempts a delivery gets before it is dropped (and logged).
	// Zero means 10.
	MaxAttempts int
	// MinBackoff is the delay before the first retry; each next one doubles, up to
	// MaxBackoff, each with random jitter (between half and all of it). Zero means 1s.
	MinBackoff time.Duration
	// MaxBackoff caps the delay between retries. Zero means 10m.
	MaxBackoff time.Duration
	// PollInterval is how often the outbox is polled when nothing wakes the deliverer
	// (deliveries due after a backoff, or enqueued by another process). Zero means 1s.
	PollInterval time.Duration
	// Workers is how many deliveries are sent at once. Zero means 8.
	Workers int
	// Logger receives delivery failures. Nil means slog.Default().
	Logger *slog.Logger
}

// Deliverer sends the store's outbox to the push configs' URLs. Several processes may run
// one on the same store: each delivery is sent by one at a time, at least once.
type Deliverer struct {
	st     store.Store
	key    *Key
	opts   Options
	log    *slog.Logger
	guard  *netguard.Guard
	client *http.Client

	wake   chan struct{}
	cancel context.CancelCauseFunc
	done   chan struct{}
	once   sync.Once
}

// errClosing is the cause of the Deliverer's context once Close is called.
var errClosing = errors.New("push: deliverer closed")

// New starts a deliverer of st's outbox signing with key. Close stops it.
func New(st store.Store, key *Key, opts *Options) *Deliverer {
	d := &Deliverer{st: st, key: key, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if opts != nil {
		d.opts = *opts
	}
	o := &d.opts
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	d.log = o.Logger
	if d.log == nil {
		d.log = slog.Default()
	}
	d.guard = netguard.New(&netguard.Options{Allow: o.Allow, AllowHosts: o.AllowHosts, Deny: o.Deny, NAT64: o.NAT64,
		Resolver: o.Resolver, Dialer: &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}})
	tr := d.guard.Transport() // dials only allowed addresses, through no proxy
	tr.ResponseHeaderTimeout = o.Timeout
	d.client = &http.Client{
		Transport: tr,
		// Redirects are not followed: a receiver answers 2xx, and a redirect is how a public
		// host would point us at a private one.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       o.Timeout,
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	d.cancel = cancel
	go d.loop(ctx)
	return d
}

// CheckURL validates a push config's URL: http or https, and a host that is allow-listed or
// resolves only to public addresses (else an error wrapping ErrBlocked). A host that does not
// resolve is accepted: the address is checked again on every delivery.
func (d *Deliverer) CheckURL(ctx context.Context, rawURL string) error {
	return checkURL(ctx, d.guard, rawURL)
}

// Wake makes the deliverer look at the outbox now: call it after writing events.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Close stops the deliverer and waits for the deliveries in flight (they are cut short: an
// interrupted delivery is retried later, by this process after a restart or by another one).
// Calling it again is harmless.
func (d *Deliverer) Close() error {
	d.once.Do(func() { d.cancel(errClosing) })
	<-d.done
	return nil
}

// Done is closed when the deliverer has stopped.
func (d *Deliverer) Done() <-chan struct{} { return d.done }

func (d *Deliverer) loop(ctx context.Context) {
	defer close(d.done)
	// A claim outlives an attempt: a delivery in flight is not claimed again meanwhile.
	lease := 2*d.opts.Timeout + 5*time.Second
	tick := time.NewTicker(d.opts.PollInterval)
	defer tick.Stop()
	for {
		batch, err := d.st.ClaimDeliveries(ctx, d.opts.Workers, lease)
		if err != nil && ctx.Err() == nil {
			d.log.Error("push: cannot claim deliveries", "err", err)
		}
		var wg sync.WaitGroup
		for _, dl := range batch {
			wg.Go(func() { d.deliver(ctx, dl) })
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		if len(batch) == d.opts.Workers {
			continue // more may be due
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-tick.C:
		}
	}
}

// deliver makes one attempt and settles the delivery in the store.
func (d *Deliverer) deliver(ctx context.Context, dl *store.Delivery) {
	err := d.send(ctx, dl)
	// Settle even when closing: the outcome is known, and a retry would repeat a success.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	log := d.log.With("task", dl.TaskID, "config", dl.ConfigID, "seq", dl.Seq, "attempt", dl.Attempts)
	switch {
	case err == nil:
		err = d.st.CompleteDelivery(sctx, dl)
	case ctx.Err() != nil:
		// Interrupted by Close: due again at once, for whoever runs next.
		err = d.st.RetryDelivery(sctx, dl, 0)
	case errors.Is(err, ErrBlocked):
		log.Warn("push: delivery dropped: its URL is not allowed", "err", err)
		err = d.st.CompleteDelivery(sctx, dl)
	case dl.Attempts >= d.opts.MaxAttempts:
		log.Warn("push: delivery dropped after its last attempt", "err", err)
		err = d.st.CompleteDelivery(sctx, dl)
	default:
		delay := d.backoff(dl.Attempts)
		log.Info("push: delivery failed; will retry", "err", err, "retry_in", delay)
		err = d.st.RetryDelivery(sctx, dl, delay)
	}
	if err != nil {
		// A lost claim: the lease ran out and someone else has the delivery now.
		log.Warn("push: cannot settle delivery", "err", err)
	}
}

// backoff is the delay after attempt n (1, 2, …): exponential, capped, with jitter.
func (d *Deliverer) backoff(n int) time.Duration {
	b := d.opts.MinBackoff
	for i := 1; i < n && b < d.opts.MaxBackoff; i++ {
		b *= 2
	}
	b = min(b, d.opts.MaxBackoff)
	return b/2 + rand.N(b/2+1)
}

// send POSTs the event, signed, to the config's URL: nil on a 2xx answer.
func (d *Deliverer) send(ctx context.Context, dl *store.Delivery) error {
	body, err := json.Marshal(a2a.StreamResponse{Event: dl.Event})
	if err != nil {
		return fmt.Errorf("push: encode event: %w", err)
	}
	id := deliveryID(dl.TaskID, dl.ConfigID, dl.Seq)
	sig, err := d.key.sign(&Claims{ID: id, IssuedAt: time.Now().Unix(), Audience: dl.Config.URL,
		TaskID: dl.TaskID, Seq: dl.Seq, BodySHA256: bodyHash(body)})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dl.Config.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, sig)
	req.Header.Set(DeliveryHeader, id)
	if dl.Config.Token != "" {
		req.Header.Set(TokenHeader, dl.Config.Token)
	}
	if a := dl.Config.Auth; a != nil && a.Scheme != "" {
		v := a.Scheme
		if a.Credentials != "" {
			v += " " + a.Credentials
		}
		req.Header.Set("Authorization", v)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("push: %s answered %s", dl.Config.URL, resp.Status)
	}
	return nil
}
