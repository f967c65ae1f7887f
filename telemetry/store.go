package telemetry

import (
	"context"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// Store returns st with the latency of its task operations (create, update, get, list,
// events, active) reported to o as a2awebcap_store_operation_duration_seconds; the other
// operations pass through unobserved. A nil o, or an Observer without metrics, returns st.
// The result keeps st's store.WriteBatcher, if it has one.
func Store(st store.Store, o *Observer) store.Store {
	if o == nil || o.m == nil {
		return st
	}
	t := &timedStore{Store: st, o: o}
	if wb, ok := st.(store.WriteBatcher); ok {
		return timedBatcher{timedStore: t, wb: wb}
	}
	return t
}

type timedStore struct {
	store.Store
	o *Observer
}

type timedBatcher struct {
	*timedStore
	wb store.WriteBatcher
}

func (t timedBatcher) WriteBatch() int { return t.wb.WriteBatch() }

func (t *timedStore) since(op string, start time.Time) { t.o.StoreOp(op, time.Since(start)) }

func (t *timedStore) Create(ctx context.Context, task *store.Task, events []a2a.Event) error {
	defer t.since("create", time.Now())
	return t.Store.Create(ctx, task, events)
}

func (t *timedStore) Update(ctx context.Context, task *store.Task, events []a2a.Event) error {
	defer t.since("update", time.Now())
	return t.Store.Update(ctx, task, events)
}

func (t *timedStore) Get(ctx context.Context, owner store.Owner, id a2a.TaskID) (*store.Task, error) {
	defer t.since("get", time.Now())
	return t.Store.Get(ctx, owner, id)
}

func (t *timedStore) List(ctx context.Context, owner store.Owner, q store.ListQuery) (*store.ListResult, error) {
	defer t.since("list", time.Now())
	return t.Store.List(ctx, owner, q)
}

func (t *timedStore) Events(ctx context.Context, owner store.Owner, id a2a.TaskID, afterSeq int64, limit int) ([]store.Event, error) {
	defer t.since("events", time.Now())
	return t.Store.Events(ctx, owner, id, afterSeq, limit)
}

func (t *timedStore) Active(ctx context.Context) ([]*store.Task, error) {
	defer t.since("active", time.Now())
	return t.Store.Active(ctx)
}
