// Package store persists what the A2A engine must not lose: tasks, each task's append-only
// event log, and push notification configs. Three implementations share one contract and one
// conformance suite (storetest): SQLite (the embedded default, one file), PostgreSQL (for several
// replicas) and memory (for tests).
//
// Every read is scoped to an Owner (tenant and principal): a task owned by someone else is
// reported as ErrNotFound, never as forbidden, so existence does not leak across owners.
//
// A task change and the events that caused it are written in one transaction (Create, Update):
// a client that reconnects replays exactly what the task went through, and a crash loses
// neither a task nor an acknowledged event.
//
// Every event written by Update also enqueues, in the same transaction, one push delivery per
// push config the task has at that moment (the outbox): a notification is never lost between
// a write and its delivery, and survives a restart. A deliverer (package push) takes due
// deliveries with ClaimDeliveries, which leases them so that several processes never send the
// same one at once, and ends each with CompleteDelivery or RetryDelivery.
//
// When several replicas of the server share a store (PostgreSQL), the replica that runs a task
// holds a lease on it (Task.Lease): set with the write that starts or resumes the run, renewed
// while it runs (RenewLeases), released on a graceful hand-over (ReleaseLeases). Once a lease has
// expired, another replica takes the task over (ClaimExpired), which counts as a write: the
// previous holder's next Update is ErrConflict, so it can do nothing more to the task.
//
// Tasks, events and push configs are stored as their JSON (events as a2a.StreamResponse), so
// what comes back is what encoding/json gives back: nil and empty slices or maps are not told
// apart, and numbers inside Metadata or data parts come back as float64.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Sentinel errors. Compare with errors.Is.
var (
	// ErrNotFound: no such task or push config for this owner.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: Create with an ID already taken (by any owner).
	ErrExists = errors.New("store: already exists")
	// ErrConflict: Update with a stale Version (someone else wrote the task first).
	ErrConflict = errors.New("store: concurrent modification")
	// ErrInvalid: a malformed argument: a nil task or one without ID, a List page token that no
	// List returned, a negative page size or event limit, a push config without ID.
	ErrInvalid = errors.New("store: invalid argument")
	// ErrLimit: PutPushConfig would create a push config past one of its PushLimits (the
	// error is a *LimitError).
	ErrLimit = errors.New("store: limit reached")
)

// PushLimits bound the push configs PutPushConfig may create. Zero (or negative) fields set
// no limit. Replacing a config that exists (same task and ID) is never refused.
type PushLimits struct {
	// PerTask bounds the push configs of one task.
	PerTask int
	// PerOwner bounds the push configs of the owner's live tasks (those not in a terminal
	// state: interrupted tasks count, since they may run again), together. Configs of
	// finished tasks receive nothing more and do not count.
	PerOwner int
}

// LimitError is the error of a PutPushConfig past a PushLimits limit. It wraps ErrLimit.
type LimitError struct {
	PerTask bool // PerTask was reached; else PerOwner was
	Limit   int  // the limit reached
}

func (e *LimitError) Error() string {
	if e.PerTask {
		return fmt.Sprintf("store: the task has %d push configs, its limit", e.Limit)
	}
	return fmt.Sprintf("store: the owner's live tasks have %d push configs, their limit", e.Limit)
}

// Unwrap makes errors.Is(err, ErrLimit) hold.
func (e *LimitError) Unwrap() error { return ErrLimit }

// PushConfigQuery selects one page of a task's push configs.
type PushConfigQuery struct {
	PageSize  int    // 0 means 100; more than 100 means 100; negative: ErrInvalid
	PageToken string // from a previous PushConfigPage; opaque; ErrInvalid if malformed
}

// PushConfigPage is one page of a task's push configs, ordered by ID (byte order).
type PushConfigPage struct {
	Configs       []*a2a.PushConfig // never nil
	NextPageToken string            // "" on the last page
}

// Owner scopes every read and write: the tenant and the authenticated principal. The zero
// Owner is the anonymous owner of an agent without authentication. Both fields are compared
// exactly (byte for byte).
type Owner struct {
	Tenant    string
	Principal string
}

// Task is a stored task with its bookkeeping.
type Task struct {
	Task    *a2a.Task
	Owner   Owner
	Version int64     // 1 after Create, +1 per Update: optimistic concurrency
	LastSeq int64     // sequence number of the newest event in the task's log (0: none)
	Created time.Time // set by Create (UTC, microsecond precision)
	Updated time.Time // set by Create and Update (UTC, µs); List orders by it, newest first

	// PushConfigs, given to Create, are stored with the task (as PutPushConfig would, each
	// with the task's ID), and the deliveries of the task's first events are enqueued for
	// them: a config sent with the message that creates a task misses none of its events.
	// Update ignores it; reads leave it nil.
	PushConfigs []*a2a.PushConfig

	// Lease is the task's lease: which replica runs it, until when (see Leases). Reads fill
	// it in; the zero Lease is none. Create and Update give the task to Lease.Holder for
	// LeaseTTL from now (the store's clock) when LeaseTTL is positive and Lease.Holder is not
	// empty; otherwise Create stores no lease and Update leaves the lease as it is. Lease.Until
	// is ignored by both.
	Lease    Lease
	LeaseTTL time.Duration
}

// Lease is a replica's claim to run a task, in a cluster of replicas sharing a store: the
// replica that runs a task holds its lease and renews it while the task runs; once it has
// expired, another replica may take the task over (ClaimExpired).
type Lease struct {
	Holder string    // the replica's name; "" when none holds it
	Until  time.Time // when it expires unless renewed, by the store's clock (UTC, µs)
}

// Event is one entry of a task's event log.
type Event struct {
	TaskID a2a.TaskID
	Seq    int64     // 1, 2, 3, … per task, without gaps
	Event  a2a.Event // *a2a.Task, *a2a.Message, *a2a.TaskStatusUpdateEvent or *a2a.TaskArtifactUpdateEvent
	Time   time.Time // when it was written: the Updated of the Create or Update that wrote it
}

// Delivery is one event of a task to send to one of the task's push configs, as claimed from
// the outbox.
type Delivery struct {
	TaskID   a2a.TaskID
	ConfigID string
	Seq      int64 // the event's sequence number in the task's log
	Owner    Owner
	Config   *a2a.PushConfig // the push config as it is now
	// Destination is where the config's URL points: its scheme, host and port, in lower
	// case ("https://hooks.example:443"); ClaimQuery.PerDestination counts by it.
	Destination string
	Event       a2a.Event // the event, as Events returns it
	Attempts    int       // claims so far, this one included
	Claim       string    // identifies this claim (for CompleteDelivery and RetryDelivery)
}

// ClaimQuery says which due deliveries ClaimDeliveries takes: how many, for how long, and
// with what fairness. The bounds count deliveries under lease — taken by earlier claims, of
// any claimant, whose lease has not ended (in flight, or lost by a crashed claimant until
// their lease ends) — together with those this claim takes, so one owner's backlog at a slow
// receiver cannot fill a deliverer: a claim passes over what the bounds leave out, and takes
// other owners' and other destinations' deliveries instead.
type ClaimQuery struct {
	// Limit is the most deliveries the claim takes; it must be positive (else ErrInvalid).
	Limit int
	// Lease is how long the claimed deliveries are the claimant's.
	Lease time.Duration
	// PerDestination bounds the deliveries of one owner to one Destination under lease at
	// once. Zero: no bound.
	PerDestination int
	// PerOwner bounds the deliveries of one owner, to every destination, under lease at
	// once. Zero: no bound.
	PerOwner int
}

// ListQuery selects tasks of one owner. Zero fields do not filter.
type ListQuery struct {
	ContextID string
	State     a2a.TaskState
	// UpdatedAfter keeps the tasks whose status changed after this instant: those whose
	// Updated is strictly after it (the engine writes every status change with Update).
	UpdatedAfter time.Time
	PageSize     int    // 0 means 50; more than 100 means 100; negative: ErrInvalid
	PageToken    string // from a previous ListResult; opaque; ErrInvalid if malformed
}

// ListResult is one page of tasks, newest first.
type ListResult struct {
	Tasks         []*Task
	NextPageToken string // "" on the last page
	TotalSize     int    // tasks matching the query, over all pages
}

// Store is implemented by the SQLite, PostgreSQL and memory stores. All methods are safe for
// concurrent use. Returned values are copies the caller may modify.
type Store interface {
	// Create stores a new task (t.Task.ID set by the caller) and its first events, whose
	// sequence numbers start at 1, in one transaction. It sets t.Version to 1, t.LastSeq, and
	// t.Created and t.Updated to now. ErrExists if the ID is taken. The task is owned by
	// t.Owner; the Version, LastSeq, Created and Updated the caller passed are ignored. It
	// also stores t.PushConfigs (ErrInvalid if one has no ID), checking no PushLimits.
	Create(ctx context.Context, t *Task, events []a2a.Event) error

	// Update replaces the task and appends events to its log, in one transaction, if the stored
	// version equals t.Version; then t.Version is incremented, t.LastSeq and t.Updated set.
	// ErrConflict if the version is stale, ErrNotFound if there is no such task. The owner
	// cannot change: the task is looked up by t.Task.ID and t.Owner, so a task of another
	// owner is ErrNotFound (checked before the version). t.Created is not written (the stored
	// one stays). On error nothing is written and t is unchanged.
	Update(ctx context.Context, t *Task, events []a2a.Event) error

	// Get returns the task. ErrNotFound if it does not exist or belongs to another owner.
	Get(ctx context.Context, owner Owner, id a2a.TaskID) (*Task, error)

	// List returns the owner's tasks matching q, newest (by Updated) first, then by ID
	// (ascending, byte order). Page tokens are positions (keyset pagination): a task updated
	// between two pages moves to the front and is not repeated on a later page.
	List(ctx context.Context, owner Owner, q ListQuery) (*ListResult, error)

	// Events returns up to limit events of the task with Seq > afterSeq, in order (limit 0
	// means all; negative: ErrInvalid). ErrNotFound as Get. A task without such events gives
	// an empty slice.
	Events(ctx context.Context, owner Owner, id a2a.TaskID, afterSeq int64, limit int) ([]Event, error)

	// Active returns every task, of every owner, whose state is not terminal (completed,
	// failed, canceled, rejected) and not interrupted (input-required, auth-required): the
	// tasks whose executor was running. Used once at startup to recover after a crash.
	// Oldest (by Created) first, then by ID. TaskStateUnspecified counts as active.
	Active(ctx context.Context) ([]*Task, error)

	// PutPushConfig creates or replaces a push config of the owner's task (by cfg.TaskID and
	// cfg.ID; cfg.ID must be set, else ErrInvalid). ErrNotFound if the task is not the owner's.
	// Creating one past a limit of lim writes nothing and returns a *LimitError (ErrLimit);
	// the check and the write are one step, also against other processes on the store.
	PutPushConfig(ctx context.Context, owner Owner, cfg *a2a.PushConfig, lim PushLimits) error
	// GetPushConfig returns one push config. ErrNotFound if absent or the task is not the
	// owner's.
	GetPushConfig(ctx context.Context, owner Owner, task a2a.TaskID, id string) (*a2a.PushConfig, error)
	// ListPushConfigs returns a page of the task's push configs, ordered by ID (byte order).
	// Page tokens are positions (the last ID returned): a config created between two pages
	// is listed if its ID comes later. ErrNotFound if the task is not the owner's.
	ListPushConfigs(ctx context.Context, owner Owner, task a2a.TaskID, q PushConfigQuery) (*PushConfigPage, error)
	// CountPushConfigs returns how many push configs the owner's live tasks (not in a
	// terminal state) have, together: what PushLimits.PerOwner bounds.
	CountPushConfigs(ctx context.Context, owner Owner) (int, error)
	// DeletePushConfig removes one push config. ErrNotFound if absent or the task is not the
	// owner's.
	DeletePushConfig(ctx context.Context, owner Owner, task a2a.TaskID, id string) error

	// ClaimDeliveries leases up to q.Limit due deliveries (of every owner) for q.Lease: until
	// the lease ends no other claim returns them. Each claim counts as an attempt (Attempts),
	// so a delivery that crashes its deliverer is still given up eventually. Deliveries are
	// due when enqueued and, after RetryDelivery, once its delay has passed. Of the due
	// deliveries the bounds of q leave, owners take turns: every owner's earliest due
	// delivery comes before any owner's second, and so on; within a turn, the earliest due
	// first. Claims of several processes on one store are counted against the bounds one
	// after the other. A delivery whose push config was deleted is deleted with it.
	ClaimDeliveries(ctx context.Context, q ClaimQuery) ([]*Delivery, error)
	// CompleteDelivery removes a claimed delivery from the outbox: it was delivered, or given
	// up. ErrConflict if the claim was lost: the lease ran out and the delivery was claimed
	// again, or it is gone (completed by another claimant, or its push config deleted).
	CompleteDelivery(ctx context.Context, d *Delivery) error
	// RetryDelivery releases a claimed delivery to be due again after delay. Errors as for
	// CompleteDelivery.
	RetryDelivery(ctx context.Context, d *Delivery, delay time.Duration) error

	// Leases: who runs a task, when several replicas share the store (see Lease). Each is
	// one step, also against other processes on the store.

	// RenewLeases extends holder's leases on the tasks ids to ttl from now (ttl must be
	// positive, else ErrInvalid). It returns, in the order given, the IDs among ids that holder
	// no longer runs, whose leases it does not renew: those whose lease another replica took
	// over or holder released, those no longer active (finished, or waiting for input: written
	// by someone else, such as a cancel on another replica), and unknown IDs.
	RenewLeases(ctx context.Context, holder string, ids []a2a.TaskID, ttl time.Duration) (lost []a2a.TaskID, err error)
	// ClaimExpired takes over, for holder and ttl, up to limit tasks of any owner that are
	// active (as Active returns them) and whose lease has expired or that have none: each
	// claimed task's Version is incremented (so that its previous holder's next Update is
	// ErrConflict) and its Lease set. It returns them as Get would, oldest (by Created)
	// first. Concurrent claims never take the same task for one expiry. holder must not be
	// empty, ttl and limit must be positive (else ErrInvalid).
	ClaimExpired(ctx context.Context, holder string, ttl time.Duration, limit int) ([]*Task, error)
	// ReleaseLeases ends holder's leases on the tasks ids now, so that the next ClaimExpired
	// takes them (a graceful hand-over). Leases holder does not hold, and unknown IDs, are
	// left alone.
	ReleaseLeases(ctx context.Context, holder string, ids []a2a.TaskID) error

	// LoadOrStore returns the value stored under name, storing value first if there is none
	// (atomically: concurrent callers, also of other processes, get the same value). For the
	// server's own small settings, such as its push signing key.
	LoadOrStore(ctx context.Context, name string, value []byte) ([]byte, error)

	// Close releases the store's resources. Calling it again is harmless; other methods
	// return an error after it.
	Close() error
}

// WriteBatcher is implemented by a store that says how many events one Update should carry at
// most when a run's events queue up while the previous ones are written (the engine's group
// commit). Larger batches cost less per event, but publish a stream's events in larger bursts;
// on a store where one write serves every stream (SQLite), that delays other streams' first
// events. Stores that do not implement it get the engine's default, 4.
type WriteBatcher interface {
	WriteBatch() int
}

// IsTerminal reports whether a task in state s can change no more.
func IsTerminal(s a2a.TaskState) bool {
	switch s {
	case a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected:
		return true
	}
	return false
}

// IsInterrupted reports whether a task in state s waits for the client.
func IsInterrupted(s a2a.TaskState) bool {
	return s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}
