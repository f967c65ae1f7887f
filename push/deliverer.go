package push

// Concurrency model
//
//   - The Deliverer owns one goroutine (loop), started by New and waited for by Close, which
//     claims due deliveries from the store whenever a worker slot is free and something may
//     be due (a Wake, a tick of PollInterval, a delivery that ended), and starts one goroutine
//     per claimed delivery. At most Options.Workers deliveries are in flight (the slots
//     channel); the loop never waits for a delivery, only for a slot, so no delivery waits for
//     another to end: there is no batch to finish.
//   - Isolation is the store's claim (store.ClaimQuery): it passes over the deliveries of a
//     principal that has PerPrincipal in flight, or PerDestination to one destination, in any
//     process on the store, and gives principals turns. A receiver that never answers holds
//     at most PerDestination of its principal's slots, each for at most Timeout; everything
//     else keeps flowing.
//   - Each delivery goroutine sends, then settles the delivery in the store and frees its slot;
//     wg counts them, and Close waits for them. No lock is held while sending: the claim (a
//     lease) is what keeps another process, or a later claim, from sending the same delivery.
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

// Defaults of Options.Workers, PerDestination and PerPrincipal.
const (
	DefaultWorkers        = 64
	DefaultPerDestination = 4
	DefaultPerPrincipal   = 8
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
	// Workers is how many deliveries this deliverer sends at once: each is a goroutine and a
	// connection. Zero means DefaultWorkers, 64.
	Workers int
	// PerDestination bounds the deliveries of one principal to one destination (the URL's
	// scheme, host and port) in flight at once, in every process on the store: a receiver
	// that is slow or never answers holds no more of its principal's deliveries than this.
	// Zero means DefaultPerDestination, 4; negative: no bound.
	PerDestination int
	// PerPrincipal bounds the deliveries of one principal in flight at once, to every
	// destination, in every process on the store: one principal's receivers cannot take every
	// worker. Anonymous callers are one principal. Zero means DefaultPerPrincipal, 8;
	// negative: no bound.
	PerPrincipal int
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
	slots  chan struct{} // one per delivery in flight; capacity Workers
	freed  chan struct{} // a delivery ended (buffered, 1)
	wg     sync.WaitGroup
	cancel context.CancelCauseFunc
	done   chan struct{}
	once   sync.Once
}

// errClosing is the cause of the Deliverer's context once Close is called.
var errClosing = errors.New("push: deliverer closed")

// New starts a deliverer of st's outbox signing with key. Close stops it.
func New(st store.Store, key *Key, opts *Options) *Deliverer {
	d := &Deliverer{st: st, key: key, wake: make(chan struct{}, 1), freed: make(chan struct{}, 1), done: make(chan struct{})}
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
		o.Workers = DefaultWorkers
	}
	if o.PerDestination == 0 {
		o.PerDestination = DefaultPerDestination
	}
	if o.PerPrincipal == 0 {
		o.PerPrincipal = DefaultPerPrincipal
	}
	d.log = o.Logger
	if d.log == nil {
		d.log = slog.Default()
	}
	d.guard = netguard.New(&netguard.Options{Allow: o.Allow, AllowHosts: o.AllowHosts, Deny: o.Deny, NAT64: o.NAT64,
		Resolver: o.Resolver, Dialer: &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}})
	tr := d.guard.Transport() // dials only allowed addresses, through no proxy
	tr.ResponseHeaderTimeout = o.Timeout
	tr.MaxIdleConnsPerHost = max(o.PerDestination, 2)
	d.client = &http.Client{
		Transport: tr,
		// Redirects are not followed: a receiver answers 2xx, and a redirect is how a public
		// host would point us at a private one.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       o.Timeout,
	}
	d.slots = make(chan struct{}, o.Workers)
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
	defer d.wg.Wait() // the deliveries in flight, cut short by ctx, settle first
	// A claim outlives an attempt: a delivery in flight is not claimed again meanwhile.
	q := store.ClaimQuery{Lease: 2*d.opts.Timeout + 5*time.Second,
		PerDestination: max(d.opts.PerDestination, 0), PerOwner: max(d.opts.PerPrincipal, 0)}
	tick := time.NewTicker(d.opts.PollInterval)
	defer tick.Stop()
	for {
		more := false
		if free := cap(d.slots) - len(d.slots); free > 0 {
			q.Limit = free
			batch, err := d.st.ClaimDeliveries(ctx, q)
			if err != nil && ctx.Err() == nil {
				d.log.Error("push: cannot claim deliveries", "err", err)
			}
			for _, dl := range batch {
				d.slots <- struct{}{} // never blocks: the claim took no more than the free slots
				d.wg.Go(func() {
					defer d.release()
					d.deliver(ctx, dl)
				})
			}
			more = err == nil && len(batch) == free // more may be due
		}
		if ctx.Err() != nil {
			return
		}
		if more {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-d.freed:
		case <-tick.C:
		}
	}
}

// release frees a delivery's slot and tells the loop, which may claim again.
func (d *Deliverer) release() {
	<-d.slots
	select {
	case d.freed <- struct{}{}:
	default:
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
