package registry

// Concurrency model. A Registry owns one goroutine, the checker, started by New and waited for
// by Close: every Tick it claims the agents whose check is due (claimDue: a lease in the store,
// so replicas sharing a database split them) and checks them with at most Concurrency fetches at
// once, each bounded by FetchTimeout, recording each result as it comes. Register, Search, Get
// and Unregister run on their callers' goroutines; a registration's fetch takes one of the same
// Concurrency slots (waiting for one while its context lasts), so neither registrations nor
// checks can have more fetches in flight than that. The Registry holds no lock of its own: the
// store's transactions serialize what must be.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/netguard"
)

// Owner is a principal that registers agents: a tenant and a user name, as the A2A call names
// them. The zero Owner is the anonymous principal.
type Owner struct {
	Tenant, Name string
}

// State is how an agent answered its last check.
type State string

const (
	// StateReachable: the agent served its card (and, if signed, a card that verifies).
	StateReachable State = "reachable"
	// StateUnreachable: the card could not be fetched; the last good card is kept.
	StateUnreachable State = "unreachable"
	// StateInvalid: the agent served something that is not a card, or a card whose signature
	// does not verify (or that lost the signatures it had); the last good card is kept.
	StateInvalid State = "invalid"
)

// Signature says what the registry knows of a card's signatures.
type Signature string

const (
	// SignatureVerified: a signature verifies with a key the registry trusts for the card.
	SignatureVerified Signature = "verified"
	// SignatureUnsigned: the card has no signatures.
	SignatureUnsigned Signature = "unsigned"
)

// Entry is a listed agent as a caller sees it.
type Entry struct {
	ID            string         `json:"id"`
	URL           string         `json:"url"`
	Card          *a2a.AgentCard `json:"card"`
	State         State          `json:"state"`
	Signature     Signature      `json:"signature"`
	RegisteredAt  time.Time      `json:"registeredAt"`
	CheckedAt     time.Time      `json:"checkedAt"`
	ReachableAt   time.Time      `json:"reachableAt"`
	Failures      int            `json:"failures"`
	LastError     string         `json:"lastError"`
	Registrations int            `json:"registrations"`
	Mine          bool           `json:"mine"`
}

// Query filters a search; every field set must hold. Strings match without regard to case.
type Query struct {
	Skill     string `json:"skill,omitempty"` // a skill whose ID or name contains it
	Tag       string `json:"tag,omitempty"`   // a skill with exactly this tag
	Name      string `json:"name,omitempty"`  // a card whose name contains it
	State     State  `json:"state,omitempty"`
	Mine      bool   `json:"mine,omitempty"` // only the caller's registrations
	PageSize  int    `json:"pageSize,omitempty"`
	PageToken string `json:"pageToken,omitempty"`
}

// Page is a page of search results.
type Page struct {
	Agents        []*Entry `json:"agents"`
	NextPageToken string   `json:"nextPageToken"`
}

// Page sizes.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// Error is a refusal of the registry, with its wire form: an HTTP status and a reason.
type Error struct {
	Status  int    // HTTP status
	Reason  string // e.g. AGENT_UNREACHABLE
	Message string
}

func (e *Error) Error() string { return "registry: " + e.Message }

// Is makes errors.Is(err, ErrNotFound) and the like match by reason.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Reason == e.Reason && t.Message == ""
}

// The reasons of the registry's refusals; match with errors.Is.
var (
	ErrNotFound       = &Error{Status: http.StatusNotFound, Reason: "NOT_FOUND"}
	ErrUnreachable    = &Error{Status: http.StatusUnprocessableEntity, Reason: "AGENT_UNREACHABLE"}
	ErrSignature      = &Error{Status: http.StatusUnprocessableEntity, Reason: "CARD_SIGNATURE_INVALID"}
	ErrUnsigned       = &Error{Status: http.StatusUnprocessableEntity, Reason: "CARD_UNSIGNED"}
	ErrFull           = &Error{Status: http.StatusTooManyRequests, Reason: "REGISTRY_FULL"}
	ErrInvalid        = &Error{Status: http.StatusBadRequest, Reason: "INVALID_ARGUMENT"}
	ErrAuthentication = &Error{Status: http.StatusUnauthorized, Reason: "UNAUTHENTICATED"}
)

func refusal(kind *Error, format string, args ...any) *Error {
	return &Error{Status: kind.Status, Reason: kind.Reason, Message: fmt.Sprintf(format, args...)}
}

// ErrInvalidArgument is an INVALID_ARGUMENT refusal saying why.
func ErrInvalidArgument(why string) *Error { return refusal(ErrInvalid, "%s", why) }

// Options configure New. Nil means the defaults.
type Options struct {
	// Guard is the SSRF guard every fetch dials through. Nil: netguard.New(nil), public
	// addresses only.
	Guard *netguard.Guard
	// TrustedKeys are keys trusted to sign any card. Nil: only the keys of a jku on the card's
	// own origin.
	TrustedKeys *jose.JSONWebKeySet
	// RequireSigned refuses cards without signatures. Zero (false): they are listed, as unsigned.
	RequireSigned bool
	// MaxPerOwner bounds one principal's registrations. Zero: 100.
	MaxPerOwner int
	// MaxAgents bounds the agents listed. Zero: 10,000.
	MaxAgents int
	// CheckInterval is how often each agent's card is fetched again. Zero: 5 minutes.
	CheckInterval time.Duration
	// Tick is how often the checker looks for due checks. Zero: CheckInterval/20, at least a
	// second. Negative: no checker (call CheckDue).
	Tick time.Duration
	// Concurrency bounds the fetches in flight, registrations' and checks' together. Zero: 8.
	Concurrency int
	// FetchTimeout bounds one fetch of a card (connect, answer, body). Zero: 10 seconds.
	FetchTimeout time.Duration
	// MaxCardBytes bounds a card. Zero: 256 KiB.
	MaxCardBytes int64
	// Logger logs checks that change an agent's state. Nil: slog.Default().
	Logger *slog.Logger
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
}

// Registry lists agents that principals registered, checking that they answer.
type Registry struct {
	st     *Store
	o      Options
	client *http.Client
	slots  chan struct{}

	ctx    context.Context // the checker's; canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	done   chan struct{}
}

// New returns a registry keeping its state in st, and starts its checker. Close stops it.
func New(st *Store, opts *Options) *Registry {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Guard == nil {
		o.Guard = netguard.New(nil)
	}
	if o.MaxPerOwner <= 0 {
		o.MaxPerOwner = 100
	}
	if o.MaxAgents <= 0 {
		o.MaxAgents = 10_000
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = 5 * time.Minute
	}
	if o.Tick == 0 {
		o.Tick = max(o.CheckInterval/20, time.Second)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = 10 * time.Second
	}
	if o.MaxCardBytes <= 0 {
		o.MaxCardBytes = 256 << 10
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Registry{st: st, o: o, slots: make(chan struct{}, o.Concurrency), done: make(chan struct{})}
	r.client = &http.Client{
		Transport: o.Guard.Transport(),
		Timeout:   o.FetchTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a card is served at its URL
		},
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if o.Tick > 0 {
		r.wg.Add(1)
		go r.checker()
	} else {
		close(r.done)
	}
	return r
}

// Close stops the checker and waits for it. It does not close the Store.
func (r *Registry) Close() error {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		if r.o.Tick > 0 {
			close(r.done)
		}
		r.client.CloseIdleConnections()
	})
	return nil
}

// Done is closed once the checker stopped.
func (r *Registry) Done() <-chan struct{} { return r.done }

// idLen is the length of an agent's ID: 16 bytes in hex.
const idLen = 32

// ID returns the ID of the agent whose card is at cardURL: the first 16 bytes of its SHA-256,
// in hex. The same URL has the same ID on every registry.
func ID(cardURL string) string {
	h := sha256.Sum256([]byte(cardURL))
	return hex.EncodeToString(h[:idLen/2])
}

// CardURL returns the URL of the card of the agent at raw: raw itself when its path ends in
// ".json", else raw's path with "/.well-known/agent-card.json" appended. It refuses what is not
// an absolute http(s) URL, and URLs with user information or a fragment; the host is lower-cased
// and a default port dropped, so that one agent has one URL.
func CardURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return "", ErrInvalidArgument(fmt.Sprintf("%q is not a URL", raw))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Opaque != "":
		return "", ErrInvalidArgument(fmt.Sprintf("%q is not an absolute http or https URL", raw))
	case u.User != nil || u.Fragment != "" || u.RawFragment != "":
		return "", ErrInvalidArgument(fmt.Sprintf("%q has user information or a fragment", raw))
	case len(raw) > 2048:
		return "", ErrInvalidArgument("the URL is longer than 2048 bytes")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	if !strings.HasSuffix(u.Path, ".json") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/.well-known/agent-card.json"
		u.RawPath = ""
	}
	return u.String(), nil
}

// checkedAgent is a card fetched and checked.
type checkedAgent struct {
	id, url   string
	card      *a2a.AgentCard
	cardJSON  []byte
	signature Signature
}

// Register lists the agent at rawURL (its base URL or its card's) as owner's registration: it
// fetches the card and checks its signatures first. created is false when owner had already
// registered it (its card is then refreshed).
func (r *Registry) Register(ctx context.Context, owner Owner, rawURL string) (e *Entry, created bool, err error) {
	cardURL, err := CardURL(rawURL)
	if err != nil {
		return nil, false, err
	}
	var prev Signature
	if old, err := r.st.get(ctx, owner, ID(cardURL)); err == nil && old != nil {
		prev = old.Signature // a card that was verified may not lose its signatures
	}
	a, err := r.check(ctx, cardURL, prev)
	if err != nil {
		return nil, false, err
	}
	now := r.o.Now()
	created, err = r.st.register(ctx, owner, a, now, r.next(now), r.o.MaxPerOwner, r.o.MaxAgents)
	var full errFull
	if errors.As(err, &full) {
		return nil, false, refusal(ErrFull, "%s", full.why)
	}
	if err != nil {
		return nil, false, fmt.Errorf("registry: %w", err)
	}
	e, err = r.st.get(ctx, owner, a.id)
	if err == nil && e == nil {
		err = refusal(ErrNotFound, "the agent was removed meanwhile")
	}
	return e, created, err
}

// next is when an agent checked at now is checked again: CheckInterval later, give or take a
// tenth, so that checks spread over the interval.
func (r *Registry) next(now time.Time) time.Time {
	iv := r.o.CheckInterval
	jitter := time.Duration(rand.Int64N(int64(iv)/5+1)) - iv/10
	return now.Add(iv + jitter)
}

// Unregister removes owner's registration of the agent id. ErrNotFound when owner has none.
func (r *Registry) Unregister(ctx context.Context, owner Owner, id string) error {
	ok, err := r.st.unregister(ctx, owner, id)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if !ok {
		return refusal(ErrNotFound, "you have no registration of agent %q", id)
	}
	return nil
}

// Get returns the agent id as owner sees it, or ErrNotFound.
func (r *Registry) Get(ctx context.Context, owner Owner, id string) (*Entry, error) {
	e, err := r.st.get(ctx, owner, id)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if e == nil {
		return nil, refusal(ErrNotFound, "no agent %q", id)
	}
	return e, nil
}

// Search returns a page of the agents q matches, ordered by name then ID, as owner sees them.
func (r *Registry) Search(ctx context.Context, owner Owner, q Query) (*Page, error) {
	size := q.PageSize
	switch {
	case size == 0:
		size = DefaultPageSize
	case size < 0 || size > MaxPageSize:
		return nil, ErrInvalidArgument(fmt.Sprintf("pageSize must be 1 to %d", MaxPageSize))
	}
	switch q.State {
	case "", StateReachable, StateUnreachable, StateInvalid:
	default:
		return nil, ErrInvalidArgument(fmt.Sprintf("state %q: want reachable, unreachable or invalid", q.State))
	}
	for _, s := range []string{q.Skill, q.Tag, q.Name} {
		if len(s) > 256 {
			return nil, ErrInvalidArgument("a search term is longer than 256 bytes")
		}
	}
	agents, next, err := r.st.search(ctx, owner, q, size)
	var rerr *Error
	if errors.As(err, &rerr) {
		return nil, rerr
	}
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if agents == nil {
		agents = []*Entry{}
	}
	return &Page{Agents: agents, NextPageToken: next}, nil
}

// acquire takes a fetch slot, waiting while ctx lasts.
func (r *Registry) acquire(ctx context.Context) error {
	select {
	case r.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (r *Registry) release() { <-r.slots }

// blockedMessage says what the SSRF guard's refusals look like to a caller: the address is not
// said (a name could have resolved to anything).
func blockedMessage(err error) string {
	var be *netguard.BlockedError
	if errors.As(err, &be) && be.Host != "" {
		return "the registry does not connect to " + be.Host + ": it resolves to an address that is not public"
	}
	if errors.As(err, &be) {
		return "the registry does not connect to that address: it is not public"
	}
	return ""
}
