// Package codec holds what the store implementations share: the JSON encoding of tasks, events
// (package a2ajson's, written and read by hand) and push configs, the page token, clock and argument checks. Keeping it in one place is what
// makes the three stores behave the same on every corner the conformance suite cannot see.
package codec

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/internal/a2ajson"
	"github.com/a2awebcap/a2awebcap/store"
)

// Page sizes of ListQuery.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)

// Now is the store clock: UTC, microsecond precision (what PostgreSQL's timestamptz keeps), no
// monotonic reading, so that a time read back equals the one written.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// FromMicros converts a stored Unix-microsecond time.
func FromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// InactiveStates are the states Store.Active excludes: terminal and interrupted ones.
var InactiveStates = []a2a.TaskState{
	a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected,
	a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired,
}

// IsActive reports whether a task in state s belongs in Store.Active.
func IsActive(s a2a.TaskState) bool { return !store.IsTerminal(s) && !store.IsInterrupted(s) }

// CheckTask validates the argument of Create and Update.
func CheckTask(t *store.Task, events []a2a.Event) error {
	if t == nil || t.Task == nil {
		return fmt.Errorf("%w: nil task", store.ErrInvalid)
	}
	if t.Task.ID == "" {
		return fmt.Errorf("%w: task without ID", store.ErrInvalid)
	}
	for i, e := range events {
		if e == nil {
			return fmt.Errorf("%w: task %s: event %d is nil", store.ErrInvalid, t.Task.ID, i)
		}
	}
	return nil
}

// CheckPushConfig validates the argument of PutPushConfig.
func CheckPushConfig(cfg *a2a.PushConfig) error {
	if cfg == nil {
		return fmt.Errorf("%w: nil push config", store.ErrInvalid)
	}
	if cfg.ID == "" {
		return fmt.Errorf("%w: push config of task %s without ID", store.ErrInvalid, cfg.TaskID)
	}
	return nil
}

// Live returns ctx.Err(): every method checks it first so that a cancelled context is honoured
// even where nothing blocks (the memory store, a fast query).
func Live(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// Encode checks a task and the events written with it (CheckTask) and encodes both, as
// Create and Update of every store begin.
func Encode(t *store.Task, events []a2a.Event) (task []byte, encoded [][]byte, err error) {
	if err := CheckTask(t, events); err != nil {
		return nil, nil, err
	}
	if task, err = EncodeTask(t.Task); err != nil {
		return nil, nil, err
	}
	if encoded, err = EncodeEvents(events); err != nil {
		return nil, nil, err
	}
	return task, encoded, nil
}

// bufs holds encoding buffers: a value is encoded into one, then copied out at its exact size.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// encode returns what appendFn appends to an empty buffer, in a slice of its own.
func encode[T any](appendFn func([]byte, T) ([]byte, error), v T) ([]byte, error) {
	bp := bufs.Get().(*[]byte)
	b, err := appendFn((*bp)[:0], v)
	var out []byte
	if err == nil {
		out = append([]byte(nil), b...)
	} else {
		b = *bp
	}
	if cap(b) <= 64<<10 { // do not keep a buffer grown by a huge task
		*bp = b[:0]
		bufs.Put(bp)
	}
	return out, err
}

// EncodeTask is the stored form of a task: json.Marshal's, written without reflection
// (a2ajson.AppendTask).
func EncodeTask(t *a2a.Task) ([]byte, error) {
	b, err := encode(a2ajson.AppendTask, t)
	if err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	return b, nil
}

// DecodeTask reads the stored form of a task (a2ajson.DecodeTask).
func DecodeTask(b []byte) (*a2a.Task, error) { return a2ajson.DecodeTask(b) }

// EncodeEvents is the stored form of events: each one wrapped as a StreamResponse
// ({"task": …}, {"message": …}, {"statusUpdate": …} or {"artifactUpdate": …}), as json.Marshal
// writes it. The events share one allocation (each slice's capacity ends where it does).
func EncodeEvents(events []a2a.Event) ([][]byte, error) {
	ends := make([]int, len(events))
	all, err := encode(func(b []byte, events []a2a.Event) ([]byte, error) {
		for i, e := range events {
			var err error
			if b, err = a2ajson.AppendEvent(b, e); err != nil {
				return nil, fmt.Errorf("%w: encode event %d: %v", store.ErrInvalid, i, err)
			}
			ends[i] = len(b)
		}
		return b, nil
	}, events)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(events))
	start := 0
	for i, end := range ends {
		out[i] = all[start:end:end]
		start = end
	}
	return out, nil
}

// DecodeEvent reads the stored form of an event.
func DecodeEvent(b []byte) (a2a.Event, error) {
	var sr a2a.StreamResponse
	if err := json.Unmarshal(b, &sr); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	return sr.Event, nil
}

// EncodePushConfig is the stored form of a push config.
func EncodePushConfig(cfg *a2a.PushConfig) ([]byte, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode push config %s/%s: %w", cfg.TaskID, cfg.ID, err)
	}
	return b, nil
}

// DecodePushConfig reads the stored form of a push config.
func DecodePushConfig(b []byte) (*a2a.PushConfig, error) {
	var cfg a2a.PushConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("decode push config: %w", err)
	}
	return &cfg, nil
}

// PageSize returns the page size of q: 50 for 0, at most 100. ErrInvalid if negative.
func PageSize(q store.ListQuery) (int, error) {
	switch {
	case q.PageSize < 0:
		return 0, fmt.Errorf("%w: page size %d", store.ErrInvalid, q.PageSize)
	case q.PageSize == 0:
		return DefaultPageSize, nil
	case q.PageSize > MaxPageSize:
		return MaxPageSize, nil
	}
	return q.PageSize, nil
}

// Cursor is the position a page token stands for: the last task of the previous page, in the
// order of List (Updated descending, then ID ascending). The next page starts strictly after it.
type Cursor struct {
	Updated time.Time
	ID      a2a.TaskID
}

// After reports whether a task (updated, id) comes after c in List order.
func (c Cursor) After(updated time.Time, id a2a.TaskID) bool {
	return updated.Before(c.Updated) || (updated.Equal(c.Updated) && id > c.ID)
}

const tokenPrefix = "t1."

// EncodeToken makes the opaque page token of a cursor.
func EncodeToken(c Cursor) string {
	raw := tokenPrefix + strconv.FormatInt(c.Updated.UnixMicro(), 10) + "." + string(c.ID)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// DecodeToken reads a page token. "" is the first page (nil cursor). ErrInvalid if the token
// was not made by EncodeToken.
func DecodeToken(tok string) (*Cursor, error) {
	if tok == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed page token", store.ErrInvalid)
	}
	rest, ok := strings.CutPrefix(string(raw), tokenPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: malformed page token", store.ErrInvalid)
	}
	us, id, ok := strings.Cut(rest, ".")
	if !ok || id == "" {
		return nil, fmt.Errorf("%w: malformed page token", store.ErrInvalid)
	}
	n, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed page token", store.ErrInvalid)
	}
	return &Cursor{Updated: FromMicros(n), ID: a2a.TaskID(id)}, nil
}

// CheckLimit validates the limit of Events.
func CheckLimit(limit int) error {
	if limit < 0 {
		return fmt.Errorf("%w: negative event limit %d", store.ErrInvalid, limit)
	}
	return nil
}

// EncodePushConfigs checks and encodes the push configs Create stores with task t, each with
// the task's ID.
func EncodePushConfigs(t *store.Task) (ids []string, encoded [][]byte, err error) {
	for _, cfg := range t.PushConfigs {
		if err := CheckPushConfig(cfg); err != nil {
			return nil, nil, err
		}
		c := *cfg
		c.TaskID = t.Task.ID
		b, err := EncodePushConfig(&c)
		if err != nil {
			return nil, nil, err
		}
		ids, encoded = append(ids, c.ID), append(encoded, b)
	}
	return ids, encoded, nil
}

// CheckClaim validates the query of ClaimDeliveries, and returns its bounds with 0 (no
// bound) made NoBound, for SQL.
func CheckClaim(q store.ClaimQuery) (perDest, perOwner int64, err error) {
	if q.Limit <= 0 {
		return 0, 0, fmt.Errorf("%w: claim limit %d is not positive", store.ErrInvalid, q.Limit)
	}
	bound := func(n int) int64 {
		if n <= 0 {
			return NoBound
		}
		return int64(n)
	}
	return bound(q.PerDestination), bound(q.PerOwner), nil
}

// NoBound stands for "no bound" in a claim's SQL.
const NoBound = int64(1) << 62

// Destination is where a push URL points, as store.Delivery.Destination says: scheme, host
// and port in lower case, the port made explicit. A URL that does not parse is its own
// destination.
func Destination(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return rawURL
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), port)
}

// Page sizes of PushConfigQuery.
const (
	DefaultPushPageSize = 100
	MaxPushPageSize     = 100
)

// PushPage reads a PushConfigQuery: the page size (100 for 0, at most 100) and the ID the page
// starts after ("" for the first page). ErrInvalid for a negative size or a malformed token.
func PushPage(q store.PushConfigQuery) (size int, after string, err error) {
	switch {
	case q.PageSize < 0:
		return 0, "", fmt.Errorf("%w: page size %d", store.ErrInvalid, q.PageSize)
	case q.PageSize == 0:
		size = DefaultPushPageSize
	default:
		size = min(q.PageSize, MaxPushPageSize)
	}
	if q.PageToken == "" {
		return size, "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(q.PageToken)
	if err != nil {
		return 0, "", fmt.Errorf("%w: malformed page token", store.ErrInvalid)
	}
	after, ok := strings.CutPrefix(string(raw), pushTokenPrefix)
	// A real position is a stored ID: valid UTF-8 without NUL, which PostgreSQL could not hold.
	if !ok || after == "" || !utf8.ValidString(after) || strings.IndexByte(after, 0) >= 0 {
		return 0, "", fmt.Errorf("%w: malformed page token", store.ErrInvalid)
	}
	return size, after, nil
}

const pushTokenPrefix = "p1."

// PushPageOf makes the page of configs read for a PushConfigQuery of the given size: configs
// holds up to size+1 of them, in ID order, the one past the page only telling that there is a
// next page.
func PushPageOf(configs []*a2a.PushConfig, size int) *store.PushConfigPage {
	p := &store.PushConfigPage{Configs: configs}
	if p.Configs == nil {
		p.Configs = []*a2a.PushConfig{}
	}
	if len(configs) > size {
		p.Configs = configs[:size]
		p.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(pushTokenPrefix + configs[size-1].ID))
	}
	return p
}

// LiveStates are the states of the tasks whose push configs PushLimits.PerOwner counts: every
// state but the terminal ones.
var LiveStates = []a2a.TaskState{
	a2a.TaskStateUnspecified, a2a.TaskStateSubmitted, a2a.TaskStateWorking,
	a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired,
}

// SQLList is states as an SQL list of string literals: 'A', 'B'. The states are this
// package's constants, which hold no quote.
func SQLList(states []a2a.TaskState) string {
	var quoted []string
	for _, st := range states {
		quoted = append(quoted, "'"+string(st)+"'")
	}
	return strings.Join(quoted, ", ")
}

// CheckPushLimits returns the *store.LimitError of creating one more push config on a task
// that has perTask of them, for an owner whose live tasks have perOwner, or nil.
func CheckPushLimits(lim store.PushLimits, perTask, perOwner int) error {
	switch {
	case lim.PerTask > 0 && perTask >= lim.PerTask:
		return &store.LimitError{PerTask: true, Limit: lim.PerTask}
	case lim.PerOwner > 0 && perOwner >= lim.PerOwner:
		return &store.LimitError{Limit: lim.PerOwner}
	}
	return nil
}

// Leasing reports whether Create or Update of t sets its lease (see store.Task.LeaseTTL).
func Leasing(t *store.Task) bool { return t.LeaseTTL > 0 && t.Lease.Holder != "" }

// CheckRenew validates the arguments of RenewLeases.
func CheckRenew(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: lease time %v is not positive", store.ErrInvalid, ttl)
	}
	return nil
}

// CheckClaimExpired validates the arguments of ClaimExpired.
func CheckClaimExpired(holder string, ttl time.Duration, limit int) error {
	if holder == "" {
		return fmt.Errorf("%w: claim without a holder", store.ErrInvalid)
	}
	if err := CheckRenew(ttl); err != nil {
		return err
	}
	if limit <= 0 {
		return fmt.Errorf("%w: claim limit %d is not positive", store.ErrInvalid, limit)
	}
	return nil
}

// LeaseEnd is when a lease of ttl taken at now ends, to the microsecond the stores keep.
func LeaseEnd(now time.Time, ttl time.Duration) time.Time {
	return now.Add(ttl).Truncate(time.Microsecond)
}
