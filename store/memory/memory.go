// Package memory is a store.Store kept in maps, for tests. It passes the same conformance suite
// as the SQLite and PostgreSQL stores: tasks, events and push configs are kept as the same JSON
// those stores write, so what comes back is decoded afresh, never shared with the caller, and
// round-trips exactly as it would through a database.
package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// errClosed is returned by every method after Close.
var errClosed = errors.New("memory store: closed")

type event struct {
	seq  int64
	time time.Time
	data []byte
}

type record struct {
	owner     store.Owner
	contextID string
	state     a2a.TaskState
	version   int64
	created   time.Time
	updated   time.Time
	task      []byte // JSON of a2a.Task
	events    []event
	push      map[string][]byte // push config ID -> JSON of a2a.PushConfig
	dests     map[string]string // push config ID -> its codec.Destination
	lease     store.Lease
}

// setPush stores a push config's JSON and destination.
func (r *record) setPush(id string, data []byte, url string) {
	if r.push == nil {
		r.push, r.dests = make(map[string][]byte), make(map[string]string)
	}
	r.push[id], r.dests[id] = data, codec.Destination(url)
}

// outKey identifies a delivery in the outbox.
type outKey struct {
	task   a2a.TaskID
	config string
	seq    int64
}

// outRow is a delivery waiting in the outbox.
type outRow struct {
	order    int64 // enqueue order, to break ties of due
	due      time.Time
	lease    time.Time // leased until; zero: not claimed
	claim    string
	attempts int
}

// Store is the in-memory store. Its zero value is not usable: call New.
type Store struct {
	mu       sync.RWMutex
	tasks    map[a2a.TaskID]*record
	outbox   map[outKey]*outRow
	enqueued int64
	settings map[string][]byte
	closed   bool
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{tasks: make(map[a2a.TaskID]*record), outbox: make(map[outKey]*outRow), settings: make(map[string][]byte)}
}

func (r *record) lastSeq() int64 { return int64(len(r.events)) }

func (r *record) toTask() (*store.Task, error) {
	t, err := codec.DecodeTask(r.task)
	if err != nil {
		return nil, err
	}
	return &store.Task{
		Task:    t,
		Owner:   r.owner,
		Version: r.version,
		LastSeq: r.lastSeq(),
		Created: r.created,
		Updated: r.updated,
		Lease:   r.lease,
	}, nil
}

func (r *record) append(encoded [][]byte, now time.Time) {
	for _, b := range encoded {
		r.events = append(r.events, event{seq: r.lastSeq() + 1, time: now, data: b})
	}
}

// get returns the owner's record; s.mu must be held.
func (s *Store) get(owner store.Owner, id a2a.TaskID) (*record, error) {
	if s.closed {
		return nil, errClosed
	}
	r, ok := s.tasks[id]
	if !ok || r.owner != owner {
		return nil, fmt.Errorf("task %s: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, t *store.Task, events []a2a.Event) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	data, encoded, err := codec.Encode(t, events)
	if err != nil {
		return err
	}
	cfgIDs, cfgs, err := codec.EncodePushConfigs(t)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if _, ok := s.tasks[t.Task.ID]; ok {
		return fmt.Errorf("create task %s: %w", t.Task.ID, store.ErrExists)
	}
	now := codec.Now()
	r := &record{
		owner:     t.Owner,
		contextID: t.Task.ContextID,
		state:     t.Task.Status.State,
		version:   1,
		created:   now,
		updated:   now,
		task:      data,
	}
	if codec.Leasing(t) {
		r.lease = store.Lease{Holder: t.Lease.Holder, Until: codec.LeaseEnd(now, t.LeaseTTL)}
	}
	r.append(encoded, now)
	for i, id := range cfgIDs {
		r.setPush(id, cfgs[i], t.PushConfigs[i].URL)
	}
	s.enqueueLocked(t.Task.ID, r, 1, now)
	s.tasks[t.Task.ID] = r
	t.Version, t.LastSeq, t.Created, t.Updated = 1, r.lastSeq(), now, now
	t.Lease = r.lease
	return nil
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, t *store.Task, events []a2a.Event) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	data, encoded, err := codec.Encode(t, events)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(t.Owner, t.Task.ID)
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if r.version != t.Version {
		return fmt.Errorf("update task %s at version %d (stored %d): %w", t.Task.ID, t.Version, r.version, store.ErrConflict)
	}
	now := codec.Now()
	r.contextID, r.state, r.task = t.Task.ContextID, t.Task.Status.State, data
	r.version++
	r.updated = now
	if codec.Leasing(t) {
		r.lease = store.Lease{Holder: t.Lease.Holder, Until: codec.LeaseEnd(now, t.LeaseTTL)}
	}
	first := r.lastSeq() + 1
	r.append(encoded, now)
	s.enqueueLocked(t.Task.ID, r, first, now)
	t.Version, t.LastSeq, t.Updated, t.Lease = r.version, r.lastSeq(), now, r.lease
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, owner store.Owner, id a2a.TaskID) (*store.Task, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, err := s.get(owner, id)
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	return r.toTask()
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, owner store.Owner, q store.ListQuery) (*store.ListResult, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	size, err := codec.PageSize(q)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	cursor, err := codec.DecodeToken(q.PageToken)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	type match struct {
		id a2a.TaskID
		r  *record
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var all []match
	for id, r := range s.tasks {
		if r.owner != owner ||
			(q.ContextID != "" && r.contextID != q.ContextID) ||
			(q.State != "" && r.state != q.State) ||
			(!q.UpdatedAfter.IsZero() && !r.updated.After(q.UpdatedAfter)) {
			continue
		}
		all = append(all, match{id, r})
	}
	slices.SortFunc(all, func(a, b match) int {
		if c := b.r.updated.Compare(a.r.updated); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	res := &store.ListResult{TotalSize: len(all), Tasks: []*store.Task{}}
	page := all
	if cursor != nil {
		i, _ := slices.BinarySearchFunc(all, *cursor, func(m match, c codec.Cursor) int {
			if c.After(m.r.updated, m.id) {
				return 1
			}
			return -1
		})
		page = all[i:]
	}
	if len(page) > size {
		page = page[:size]
		last := page[size-1]
		res.NextPageToken = codec.EncodeToken(codec.Cursor{Updated: last.r.updated, ID: last.id})
	}
	for _, m := range page {
		t, err := m.r.toTask()
		if err != nil {
			return nil, fmt.Errorf("list: task %s: %w", m.id, err)
		}
		res.Tasks = append(res.Tasks, t)
	}
	return res, nil
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, owner store.Owner, id a2a.TaskID, afterSeq int64, limit int) ([]store.Event, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if err := codec.CheckLimit(limit); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, err := s.get(owner, id)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	evs := r.events[min(max(afterSeq, 0), r.lastSeq()):] // seq n is at index n-1
	if limit > 0 && len(evs) > limit {
		evs = evs[:limit]
	}
	out := make([]store.Event, 0, len(evs))
	for _, e := range evs {
		ev, err := codec.DecodeEvent(e.data)
		if err != nil {
			return nil, fmt.Errorf("events: task %s seq %d: %w", id, e.seq, err)
		}
		out = append(out, store.Event{TaskID: id, Seq: e.seq, Event: ev, Time: e.time})
	}
	return out, nil
}

// Active implements store.Store.
func (s *Store) Active(ctx context.Context) ([]*store.Task, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	out := []*store.Task{}
	for id, r := range s.tasks {
		if !codec.IsActive(r.state) {
			continue
		}
		t, err := r.toTask()
		if err != nil {
			return nil, fmt.Errorf("active: task %s: %w", id, err)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *store.Task) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Task.ID, b.Task.ID)
	})
	return out, nil
}

// PutPushConfig implements store.Store.
func (s *Store) PutPushConfig(ctx context.Context, owner store.Owner, cfg *a2a.PushConfig, lim store.PushLimits) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	if err := codec.CheckPushConfig(cfg); err != nil {
		return err
	}
	data, err := codec.EncodePushConfig(cfg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(owner, cfg.TaskID)
	if err != nil {
		return fmt.Errorf("put push config: %w", err)
	}
	if _, exists := r.push[cfg.ID]; !exists {
		perOwner := 0
		if lim.PerOwner > 0 {
			perOwner = s.countLocked(owner)
		}
		if err := codec.CheckPushLimits(lim, len(r.push), perOwner); err != nil {
			return err
		}
	}
	r.setPush(cfg.ID, data, cfg.URL)
	return nil
}

// countLocked counts the push configs of the owner's live tasks, visiting every task: the
// memory store is for tests. s.mu must be held.
func (s *Store) countLocked(owner store.Owner) int {
	n := 0
	for _, r := range s.tasks {
		if r.owner == owner && !store.IsTerminal(r.state) {
			n += len(r.push)
		}
	}
	return n
}

// CountPushConfigs implements store.Store.
func (s *Store) CountPushConfigs(ctx context.Context, owner store.Owner) (int, error) {
	if err := codec.Live(ctx); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, errClosed
	}
	return s.countLocked(owner), nil
}

// GetPushConfig implements store.Store.
func (s *Store) GetPushConfig(ctx context.Context, owner store.Owner, task a2a.TaskID, id string) (*a2a.PushConfig, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, err := s.get(owner, task)
	if err != nil {
		return nil, fmt.Errorf("get push config: %w", err)
	}
	data, ok := r.push[id]
	if !ok {
		return nil, fmt.Errorf("get push config %s of task %s: %w", id, task, store.ErrNotFound)
	}
	return codec.DecodePushConfig(data)
}

// ListPushConfigs implements store.Store.
func (s *Store) ListPushConfigs(ctx context.Context, owner store.Owner, task a2a.TaskID, q store.PushConfigQuery) (*store.PushConfigPage, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	size, after, err := codec.PushPage(q)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, err := s.get(owner, task)
	if err != nil {
		return nil, fmt.Errorf("list push configs: %w", err)
	}
	ids := make([]string, 0, len(r.push))
	for id := range r.push {
		if id > after {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = ids[:min(len(ids), size+1)]
	out := make([]*a2a.PushConfig, 0, len(ids))
	for _, id := range ids {
		cfg, err := codec.DecodePushConfig(r.push[id])
		if err != nil {
			return nil, err
		}
		out = append(out, cfg)
	}
	return codec.PushPageOf(out, size), nil
}

// DeletePushConfig implements store.Store.
func (s *Store) DeletePushConfig(ctx context.Context, owner store.Owner, task a2a.TaskID, id string) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(owner, task)
	if err != nil {
		return fmt.Errorf("delete push config: %w", err)
	}
	if _, ok := r.push[id]; !ok {
		return fmt.Errorf("delete push config %s of task %s: %w", id, task, store.ErrNotFound)
	}
	delete(r.push, id)
	delete(r.dests, id)
	for k := range s.outbox {
		if k.task == task && k.config == id {
			delete(s.outbox, k)
		}
	}
	return nil
}

// Close implements store.Store: it drops everything.
// WriteBatch implements store.WriteBatcher: writes cost little here and do not wait on each
// other, so a run's queued events go in batches of up to 64 (bench/a2a: lower time to first
// event and more events/s than the default 4).
func (s *Store) WriteBatch() int { return 64 }

func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.tasks, s.outbox, s.settings = nil, nil, nil
	return nil
}
