// Package storetest is the conformance suite every store.Store implementation passes, and the
// benchmarks they share. An implementation's test calls Run with a function that opens a new,
// empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s := memory.New()
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// Run runs the conformance suite. Every subtest calls open once and gets a new, empty store of
// its own, so subtests run in parallel; open should register the store's Close (and the removal
// of whatever it created) with t.Cleanup. The Close subtest also closes its store itself, so a
// second Close must be harmless.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"CreateGet", testCreateGet},
		{"CopiesAreIndependent", testCopies},
		{"CreateExists", testCreateExists},
		{"InvalidArguments", testInvalid},
		{"Update", testUpdate},
		{"UpdateConflict", testUpdateConflict},
		{"UpdateNotFound", testUpdateNotFound},
		{"Events", testEvents},
		{"EventKinds", testEventKinds},
		{"ConflictWritesNothing", testConflictWritesNothing},
		{"OwnerScoping", testOwnerScoping},
		{"ListFilters", testListFilters},
		{"ListOrder", testListOrder},
		{"ListPagination", testListPagination},
		{"ListPageSize", testListPageSize},
		{"ListBadToken", testListBadToken},
		{"Active", testActive},
		{"Leases", testLeases},
		{"ClaimExpired", testClaimExpired},
		{"RenewRelease", testRenewRelease},
		{"LeaseArguments", testLeaseArguments},
		{"ConcurrentClaimExpired", testConcurrentClaimExpired},
		{"PushConfigs", testPushConfigs},
		{"PushConfigPages", testPushConfigPages},
		{"PushLimits", testPushLimits},
		{"ConcurrentPushLimits", testConcurrentPushLimits},
		{"Outbox", testOutbox},
		{"CreateWithPushConfigs", testCreateWithPushConfigs},
		{"ConcurrentClaims", testConcurrentClaims},
		{"ClaimBounds", testClaimBounds},
		{"ClaimLeaseEnds", testClaimLeaseEnds},
		{"ClaimTurns", testClaimTurns},
		{"ConcurrentClaimBounds", testConcurrentClaimBounds},
		{"LoadOrStore", testLoadOrStore},
		{"ConcurrentCreate", testConcurrentCreate},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"LargeTask", testLargeTask},
		{"ChunkedStream", testChunkedStream},
		{"ContextCanceled", testContextCanceled},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// create stores a new task of owner in state st, with the given events, and returns it.
func create(t *testing.T, s store.Store, owner store.Owner, contextID string, st a2a.TaskState, events ...a2a.Event) *store.Task {
	t.Helper()
	task := &store.Task{Task: newTask(newID("task"), contextID, st), Owner: owner}
	if err := s.Create(t.Context(), task, events); err != nil {
		t.Fatalf("Create(%s): %v", task.Task.ID, err)
	}
	return task
}

// get reads a task that must exist.
func get(t *testing.T, s store.Store, owner store.Owner, id a2a.TaskID) *store.Task {
	t.Helper()
	got, err := s.Get(t.Context(), owner, id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return got
}

// events reads all events of a task that must exist.
func events(t *testing.T, s store.Store, owner store.Owner, id a2a.TaskID) []store.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), owner, id, 0, 0)
	if err != nil {
		t.Fatalf("Events(%s): %v", id, err)
	}
	return evs
}

// wantErr fails unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

func ids(tasks []*store.Task) []a2a.TaskID {
	out := make([]a2a.TaskID, len(tasks))
	for i, t := range tasks {
		out[i] = t.Task.ID
	}
	return out
}

func testCreateGet(t *testing.T, s store.Store) {
	for _, owner := range []store.Owner{alice, aliceT2, anon} {
		before := time.Now().Add(-time.Second)
		events := allEventKinds(newTask("x", "ctx", a2a.TaskStateSubmitted))
		task := &store.Task{Task: newTask(newID("task"), "ctx", a2a.TaskStateWorking), Owner: owner,
			Version: 42, LastSeq: 7} // ignored by Create
		if err := s.Create(t.Context(), task, events); err != nil {
			t.Fatalf("Create: %v", err)
		}
		if task.Version != 1 || task.LastSeq != int64(len(events)) {
			t.Errorf("after Create: Version %d LastSeq %d, want 1 and %d", task.Version, task.LastSeq, len(events))
		}
		if task.Created.IsZero() || !task.Created.Equal(task.Updated) || task.Created.Before(before) {
			t.Errorf("after Create: Created %v Updated %v, want equal and now", task.Created, task.Updated)
		}
		if task.Created.Location() != time.UTC {
			t.Errorf("Created %v is not UTC", task.Created)
		}
		got := get(t, s, owner, task.Task.ID)
		diff(t, "Get after Create", task, got)
	}
}

func testCopies(t *testing.T, s store.Store) {
	in := &store.Task{Task: newTask(newID("task"), "ctx", a2a.TaskStateWorking), Owner: alice}
	if err := s.Create(t.Context(), in, []a2a.Event{statusEvent(in.Task, a2a.TaskStateWorking, "e1")}); err != nil {
		t.Fatal(err)
	}
	want := get(t, s, alice, in.Task.ID)
	// Changing what was passed in or what came out must not change what is stored.
	in.Task.History[0].Parts[0] = a2a.NewTextPart("changed")
	in.Task.Metadata["writer"] = "changed"
	got := get(t, s, alice, in.Task.ID)
	got.Task.Artifacts = nil
	got.Task.Status.State = a2a.TaskStateFailed
	got.Owner = bob
	evs := events(t, s, alice, in.Task.ID)
	evs[0].Event.(*a2a.TaskStatusUpdateEvent).Metadata["text"] = "changed"
	diff(t, "Get after changing copies", want, get(t, s, alice, in.Task.ID))
	if txt := eventText(events(t, s, alice, in.Task.ID)[0].Event); txt != "e1" {
		t.Errorf("event changed through a returned copy: %q", txt)
	}
}

func testCreateExists(t *testing.T, s store.Store) {
	first := create(t, s, alice, "ctx", a2a.TaskStateWorking, statusEvent(newTask("x", "c", ""), a2a.TaskStateWorking, "first"))
	want := get(t, s, alice, first.Task.ID)
	for _, owner := range []store.Owner{alice, bob, aliceT2, anon} {
		again := &store.Task{Task: newTask(first.Task.ID, "other", a2a.TaskStateCompleted), Owner: owner}
		err := s.Create(t.Context(), again, []a2a.Event{statusEvent(again.Task, a2a.TaskStateCompleted, "second")})
		wantErr(t, fmt.Sprintf("Create of a taken ID by %+v", owner), err, store.ErrExists)
	}
	diff(t, "task after failed Creates", want, get(t, s, alice, first.Task.ID))
	if evs := events(t, s, alice, first.Task.ID); len(evs) != 1 || eventText(evs[0].Event) != "first" {
		t.Errorf("events after failed Creates: %d events, want the first one only", len(evs))
	}
}

func testInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	cases := []struct {
		name string
		call func() error
	}{
		{"Create nil", func() error { return s.Create(ctx, nil, nil) }},
		{"Create nil task", func() error { return s.Create(ctx, &store.Task{Owner: alice}, nil) }},
		{"Create without ID", func() error {
			return s.Create(ctx, &store.Task{Task: newTask("", "ctx", a2a.TaskStateWorking), Owner: alice}, nil)
		}},
		{"Create nil event", func() error {
			return s.Create(ctx, &store.Task{Task: newTask(newID("task"), "ctx", a2a.TaskStateWorking), Owner: alice}, []a2a.Event{nil})
		}},
		{"Update nil", func() error { return s.Update(ctx, nil, nil) }},
		{"Update nil event", func() error {
			cp := *task
			return s.Update(ctx, &cp, []a2a.Event{statusEvent(task.Task, a2a.TaskStateWorking, "ok"), nil})
		}},
		{"Events negative limit", func() error { _, err := s.Events(ctx, alice, task.Task.ID, 0, -1); return err }},
		{"List negative page size", func() error { _, err := s.List(ctx, alice, store.ListQuery{PageSize: -1}); return err }},
		{"PutPushConfig nil", func() error { return s.PutPushConfig(ctx, alice, nil, store.PushLimits{}) }},
		{"PutPushConfig without ID", func() error {
			return s.PutPushConfig(ctx, alice, &a2a.PushConfig{TaskID: task.Task.ID, URL: "https://example.com"}, store.PushLimits{})
		}},
	}
	for _, c := range cases {
		wantErr(t, c.name, c.call(), store.ErrInvalid)
	}
	// Nothing was written by the failed calls.
	got := get(t, s, alice, task.Task.ID)
	if got.Version != 1 || got.LastSeq != 0 {
		t.Errorf("after invalid calls: Version %d LastSeq %d, want 1 and 0", got.Version, got.LastSeq)
	}
	if res, err := s.List(ctx, alice, store.ListQuery{}); err != nil || res.TotalSize != 1 {
		t.Errorf("after invalid Creates: List gives %v, %v; want the one task", res, err)
	}
}

func testUpdate(t *testing.T, s store.Store) {
	task := create(t, s, alice, "ctx", a2a.TaskStateSubmitted, statusEvent(newTask("x", "c", ""), a2a.TaskStateSubmitted, "e1"))
	created := task.Created
	for i, st := range []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateCompleted} {
		tick()
		prevUpdated := task.Updated
		task.Task.Status.State = st
		task.Task.Artifacts = append(task.Task.Artifacts, &a2a.Artifact{ID: a2a.ArtifactID(fmt.Sprint("a", i)), Parts: a2a.ContentParts{a2a.NewTextPart(string(st))}})
		task.Task.ContextID = fmt.Sprint("ctx-", i) // indexed columns follow the task
		task.Created = time.Time{}                  // not written by Update
		if err := s.Update(t.Context(), task, []a2a.Event{statusEvent(task.Task, st, string(st))}); err != nil {
			t.Fatalf("Update to %s: %v", st, err)
		}
		if task.Version != int64(i+2) || task.LastSeq != int64(i+2) {
			t.Errorf("after Update %d: Version %d LastSeq %d, want %d and %d", i, task.Version, task.LastSeq, i+2, i+2)
		}
		if !task.Updated.After(prevUpdated) {
			t.Errorf("after Update %d: Updated %v not after %v", i, task.Updated, prevUpdated)
		}
		task.Created = created
		diff(t, fmt.Sprintf("Get after Update %d", i), task, get(t, s, alice, task.Task.ID))
	}
	// The indexed columns were updated too.
	res, err := s.List(t.Context(), alice, store.ListQuery{ContextID: "ctx-2", State: a2a.TaskStateCompleted})
	if err != nil || len(res.Tasks) != 1 {
		t.Fatalf("List by the updated context and state: %v, %v", res, err)
	}
	// An Update without events bumps the version and leaves the log alone.
	if err := s.Update(t.Context(), task, nil); err != nil {
		t.Fatal(err)
	}
	if task.Version != 5 || task.LastSeq != 4 {
		t.Errorf("after Update without events: Version %d LastSeq %d, want 5 and 4", task.Version, task.LastSeq)
	}
}

func testUpdateConflict(t *testing.T, s store.Store) {
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	stale := *task // Version 1
	if err := s.Update(t.Context(), task, nil); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{0, 1, 3, -1} {
		st := stale
		st.Version = v
		st.Task = newTask(task.Task.ID, "ctx", a2a.TaskStateFailed)
		err := s.Update(t.Context(), &st, nil)
		wantErr(t, fmt.Sprintf("Update at version %d of a task at version 2", v), err, store.ErrConflict)
		if st.Version != v {
			t.Errorf("failed Update changed t.Version from %d to %d", v, st.Version)
		}
	}
	if got := get(t, s, alice, task.Task.ID); got.Version != 2 || got.Task.Status.State != a2a.TaskStateWorking {
		t.Errorf("after conflicts: Version %d state %s, want 2 and working", got.Version, got.Task.Status.State)
	}
}

func testUpdateNotFound(t *testing.T, s store.Store) {
	task := &store.Task{Task: newTask("no-such-task", "ctx", a2a.TaskStateWorking), Owner: alice, Version: 1}
	err := s.Update(t.Context(), task, []a2a.Event{statusEvent(task.Task, a2a.TaskStateWorking, "x")})
	wantErr(t, "Update of a missing task", err, store.ErrNotFound)
	_, err = s.Get(t.Context(), alice, "no-such-task")
	wantErr(t, "Get after Update of a missing task", err, store.ErrNotFound)
}

func testEvents(t *testing.T, s store.Store) {
	base := newTask("x", "c", "")
	task := create(t, s, alice, "ctx", a2a.TaskStateSubmitted,
		statusEvent(base, a2a.TaskStateSubmitted, "1"), statusEvent(base, a2a.TaskStateWorking, "2"))
	var written []string
	written = append(written, "1", "2")
	for _, batch := range [][]string{{"3", "4", "5"}, {}, {"6"}} {
		var evs []a2a.Event
		for _, txt := range batch {
			evs = append(evs, statusEvent(task.Task, a2a.TaskStateWorking, txt))
		}
		if err := s.Update(t.Context(), task, evs); err != nil {
			t.Fatal(err)
		}
		written = append(written, batch...)
		if task.LastSeq != int64(len(written)) {
			t.Errorf("LastSeq %d after %d events", task.LastSeq, len(written))
		}
	}
	all := events(t, s, alice, task.Task.ID)
	if len(all) != 6 {
		t.Fatalf("%d events, want 6", len(all))
	}
	for i, e := range all {
		if e.Seq != int64(i+1) || e.TaskID != task.Task.ID || eventText(e.Event) != written[i] || e.Time.IsZero() {
			t.Errorf("event %d: seq %d task %s text %q time %v; want seq %d task %s text %q", i, e.Seq, e.TaskID, eventText(e.Event), e.Time, i+1, task.Task.ID, written[i])
		}
		if i > 0 && e.Time.Before(all[i-1].Time) {
			t.Errorf("event %d written before event %d", i+1, i)
		}
	}
	if !all[5].Time.Equal(task.Updated) {
		t.Errorf("time of the last event %v, want the Updated of its Update %v", all[5].Time, task.Updated)
	}
	diff(t, "first event", statusEvent(base, a2a.TaskStateSubmitted, "1"), all[0].Event)
	for _, c := range []struct {
		after      int64
		limit      int
		first, len int64
	}{
		{0, 0, 1, 6}, {0, 1, 1, 1}, {2, 0, 3, 4}, {2, 2, 3, 2}, {5, 10, 6, 1},
		{6, 0, 0, 0}, {100, 0, 0, 0}, {-5, 3, 1, 3}, {0, 1000, 1, 6},
	} {
		got, err := s.Events(t.Context(), alice, task.Task.ID, c.after, c.limit)
		if err != nil {
			t.Fatalf("Events(after %d, limit %d): %v", c.after, c.limit, err)
		}
		if int64(len(got)) != c.len || (c.len > 0 && got[0].Seq != c.first) {
			t.Errorf("Events(after %d, limit %d): %d events from seq %v; want %d from %d", c.after, c.limit, len(got), seqs(got), c.len, c.first)
		}
		for i := range got {
			diff(t, fmt.Sprintf("Events(after %d) [%d]", c.after, i), all[got[i].Seq-1], got[i])
		}
	}
	// A task without events has an empty log, not an error.
	empty := create(t, s, alice, "ctx", a2a.TaskStateSubmitted)
	if got, err := s.Events(t.Context(), alice, empty.Task.ID, 0, 0); err != nil || len(got) != 0 {
		t.Errorf("Events of a task without events: %v, %v", got, err)
	}
	_, err := s.Events(t.Context(), alice, "no-such-task", 0, 0)
	wantErr(t, "Events of a missing task", err, store.ErrNotFound)
}

func seqs(evs []store.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func testEventKinds(t *testing.T, s store.Store) {
	base := newTask(newID("task"), "ctx", a2a.TaskStateSubmitted)
	in := allEventKinds(base)
	task := &store.Task{Task: base, Owner: alice}
	if err := s.Create(t.Context(), task, in[:2]); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(t.Context(), task, in[2:]); err != nil {
		t.Fatal(err)
	}
	got := events(t, s, alice, task.Task.ID)
	if len(got) != len(in) {
		t.Fatalf("%d events, want %d", len(got), len(in))
	}
	for i := range in {
		if fmt.Sprintf("%T", got[i].Event) != fmt.Sprintf("%T", in[i]) {
			t.Errorf("event %d is a %T, want %T", i+1, got[i].Event, in[i])
		}
		diff(t, fmt.Sprintf("event %d", i+1), in[i], got[i].Event)
	}
}

func testConflictWritesNothing(t *testing.T, s store.Store) {
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking, statusEvent(newTask("x", "c", ""), a2a.TaskStateWorking, "1"))
	stale := *task
	staleTask := *task.Task
	stale.Task = &staleTask
	if err := s.Update(t.Context(), task, []a2a.Event{statusEvent(task.Task, a2a.TaskStateWorking, "2")}); err != nil {
		t.Fatal(err)
	}
	want := get(t, s, alice, task.Task.ID)
	stale.Task.Status.State = a2a.TaskStateFailed
	err := s.Update(t.Context(), &stale, []a2a.Event{
		statusEvent(stale.Task, a2a.TaskStateFailed, "lost-1"), statusEvent(stale.Task, a2a.TaskStateFailed, "lost-2"),
	})
	wantErr(t, "stale Update", err, store.ErrConflict)
	if stale.Version != 1 || stale.LastSeq != 1 {
		t.Errorf("failed Update changed its argument: Version %d LastSeq %d", stale.Version, stale.LastSeq)
	}
	diff(t, "task after a stale Update", want, get(t, s, alice, task.Task.ID))
	evs := events(t, s, alice, task.Task.ID)
	var texts []string
	for _, e := range evs {
		texts = append(texts, eventText(e.Event))
	}
	if !slices.Equal(texts, []string{"1", "2"}) {
		t.Errorf("events after a stale Update: %q, want [1 2]", texts)
	}
	// The next Update continues the sequence without a gap.
	if err := s.Update(t.Context(), task, []a2a.Event{statusEvent(task.Task, a2a.TaskStateWorking, "3")}); err != nil {
		t.Fatal(err)
	}
	if evs := events(t, s, alice, task.Task.ID); len(evs) != 3 || evs[2].Seq != 3 {
		t.Errorf("after a stale Update, the next one wrote seqs %v, want 1 2 3", seqs(evs))
	}
}

func testOwnerScoping(t *testing.T, s store.Store) {
	ctx := t.Context()
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking, statusEvent(newTask("x", "c", ""), a2a.TaskStateWorking, "1"))
	cfg := &a2a.PushConfig{TaskID: task.Task.ID, ID: "cfg", URL: "https://example.com/hook"}
	if err := s.PutPushConfig(ctx, alice, cfg, store.PushLimits{}); err != nil {
		t.Fatal(err)
	}
	want := get(t, s, alice, task.Task.ID)
	for _, other := range []store.Owner{
		bob, aliceT2, anon,
		{Tenant: "t1", Principal: "alice "}, {Tenant: "T1", Principal: "alice"}, {Tenant: "", Principal: "alice"},
	} {
		name := fmt.Sprintf("owner %+v", other)
		_, err := s.Get(ctx, other, task.Task.ID)
		wantErr(t, name+": Get", err, store.ErrNotFound)
		_, err = s.Events(ctx, other, task.Task.ID, 0, 0)
		wantErr(t, name+": Events", err, store.ErrNotFound)
		upd := *task
		upd.Owner = other
		upd.Task = newTask(task.Task.ID, "ctx", a2a.TaskStateFailed)
		err = s.Update(ctx, &upd, []a2a.Event{statusEvent(upd.Task, a2a.TaskStateFailed, "x")})
		wantErr(t, name+": Update", err, store.ErrNotFound)
		res, err := s.List(ctx, other, store.ListQuery{})
		if err != nil || len(res.Tasks) != 0 || res.TotalSize != 0 {
			t.Errorf("%s: List gives %d tasks (total %d), %v; want none", name, len(res.Tasks), res.TotalSize, err)
		}
		res, err = s.List(ctx, other, store.ListQuery{ContextID: "ctx"})
		if err != nil || len(res.Tasks) != 0 {
			t.Errorf("%s: List by context gives %d tasks, %v; want none", name, len(res.Tasks), err)
		}
		err = s.PutPushConfig(ctx, other, &a2a.PushConfig{TaskID: task.Task.ID, ID: "cfg", URL: "https://evil.example/"}, store.PushLimits{})
		wantErr(t, name+": PutPushConfig", err, store.ErrNotFound)
		err = s.PutPushConfig(ctx, other, &a2a.PushConfig{TaskID: task.Task.ID, ID: "new", URL: "https://evil.example/"}, store.PushLimits{})
		wantErr(t, name+": PutPushConfig of a new ID", err, store.ErrNotFound)
		_, err = s.GetPushConfig(ctx, other, task.Task.ID, "cfg")
		wantErr(t, name+": GetPushConfig", err, store.ErrNotFound)
		_, err = listConfigs(ctx, s, other, task.Task.ID)
		wantErr(t, name+": ListPushConfigs", err, store.ErrNotFound)
		err = s.DeletePushConfig(ctx, other, task.Task.ID, "cfg")
		wantErr(t, name+": DeletePushConfig", err, store.ErrNotFound)
	}
	// Nothing the others did had any effect.
	diff(t, "task after the others' calls", want, get(t, s, alice, task.Task.ID))
	if evs := events(t, s, alice, task.Task.ID); len(evs) != 1 {
		t.Errorf("%d events after the others' calls, want 1", len(evs))
	}
	cfgs, err := listConfigs(ctx, s, alice, task.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "push configs after the others' calls", []*a2a.PushConfig{cfg}, cfgs)
	// The owner's Active includes every owner's tasks.
	active, err := s.Active(ctx)
	if err != nil || len(active) != 1 || active[0].Owner != alice {
		t.Errorf("Active: %v, %v; want alice's task", active, err)
	}
}

// listFixture creates tasks of several owners, contexts and states, each updated after the
// previous one, and returns alice's by name.
func listFixture(t *testing.T, s store.Store) map[string]*store.Task {
	m := map[string]*store.Task{}
	for _, x := range []struct {
		name  string
		owner store.Owner
		ctx   string
		state a2a.TaskState
	}{
		{"a1", alice, "c1", a2a.TaskStateWorking},
		{"b1", bob, "c1", a2a.TaskStateWorking},
		{"a2", alice, "c1", a2a.TaskStateCompleted},
		{"x1", aliceT2, "c1", a2a.TaskStateWorking},
		{"a3", alice, "c2", a2a.TaskStateWorking},
		{"a4", alice, "c2", a2a.TaskStateInputRequired},
	} {
		tick()
		m[x.name] = create(t, s, x.owner, x.ctx, x.state)
	}
	tick()
	a1 := m["a1"]
	a1.Task.Metadata["touched"] = true
	if err := s.Update(t.Context(), a1, nil); err != nil { // a1 is now the newest
		t.Fatal(err)
	}
	return m
}

func testListFilters(t *testing.T, s store.Store) {
	m := listFixture(t, s)
	future := time.Now().Add(time.Hour)
	cases := []struct {
		name  string
		owner store.Owner
		q     store.ListQuery
		want  []string
	}{
		{"all", alice, store.ListQuery{}, []string{"a1", "a4", "a3", "a2"}},
		{"context", alice, store.ListQuery{ContextID: "c1"}, []string{"a1", "a2"}},
		{"state", alice, store.ListQuery{State: a2a.TaskStateWorking}, []string{"a1", "a3"}},
		{"updated after", alice, store.ListQuery{UpdatedAfter: m["a2"].Updated}, []string{"a1", "a4", "a3"}},
		{"updated after, strictly", alice, store.ListQuery{UpdatedAfter: m["a4"].Updated}, []string{"a1"}},
		{"updated after, before all", alice, store.ListQuery{UpdatedAfter: time.Unix(0, 0)}, []string{"a1", "a4", "a3", "a2"}},
		{"updated after, future", alice, store.ListQuery{UpdatedAfter: future}, nil},
		{"context and state", alice, store.ListQuery{ContextID: "c2", State: a2a.TaskStateInputRequired}, []string{"a4"}},
		{"context, state and time", alice, store.ListQuery{ContextID: "c1", State: a2a.TaskStateWorking, UpdatedAfter: m["a4"].Updated}, []string{"a1"}},
		{"no such context", alice, store.ListQuery{ContextID: "c3"}, nil},
		{"no such state", alice, store.ListQuery{State: a2a.TaskStateRejected}, nil},
		{"another principal", bob, store.ListQuery{}, []string{"b1"}},
		{"another tenant", aliceT2, store.ListQuery{ContextID: "c1"}, []string{"x1"}},
		{"anonymous", anon, store.ListQuery{}, nil},
	}
	for _, c := range cases {
		res, err := s.List(t.Context(), c.owner, c.q)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var want []a2a.TaskID
		for _, n := range c.want {
			want = append(want, m[n].Task.ID)
		}
		diff(t, c.name+": IDs", want, ids(res.Tasks))
		if res.TotalSize != len(c.want) || res.NextPageToken != "" {
			t.Errorf("%s: TotalSize %d token %q, want %d and none", c.name, res.TotalSize, res.NextPageToken, len(c.want))
		}
		for _, got := range res.Tasks {
			for _, n := range c.want {
				if m[n].Task.ID == got.Task.ID {
					diff(t, c.name+": task "+n, m[n], got)
				}
			}
		}
	}
}

func testListOrder(t *testing.T, s store.Store) {
	var tasks []*store.Task
	for range 5 {
		tick()
		tasks = append(tasks, create(t, s, alice, "ctx", a2a.TaskStateWorking))
	}
	list := func() []a2a.TaskID {
		res, err := s.List(t.Context(), alice, store.ListQuery{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(res.Tasks); i++ {
			a, b := res.Tasks[i-1], res.Tasks[i]
			if a.Updated.Before(b.Updated) || (a.Updated.Equal(b.Updated) && a.Task.ID > b.Task.ID) {
				t.Errorf("List order: %s (%v) before %s (%v)", a.Task.ID, a.Updated, b.Task.ID, b.Updated)
			}
		}
		return ids(res.Tasks)
	}
	diff(t, "newest first", []a2a.TaskID{tasks[4].Task.ID, tasks[3].Task.ID, tasks[2].Task.ID, tasks[1].Task.ID, tasks[0].Task.ID}, list())
	tick()
	if err := s.Update(t.Context(), tasks[1], nil); err != nil {
		t.Fatal(err)
	}
	diff(t, "after an Update", []a2a.TaskID{tasks[1].Task.ID, tasks[4].Task.ID, tasks[3].Task.ID, tasks[2].Task.ID, tasks[0].Task.ID}, list())
	// Tasks written in the same microsecond are ordered by ID. A burst of concurrent Creates
	// gives ties (how many depends on the store's speed): the order and paging through it
	// must hold for them.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				task := &store.Task{Task: newTask(newID("burst"), "burst", a2a.TaskStateWorking), Owner: alice}
				if err := s.Create(t.Context(), task, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	res, err := s.List(t.Context(), alice, store.ListQuery{ContextID: "burst", PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	all := res.Tasks
	for res.NextPageToken != "" {
		if res, err = s.List(t.Context(), alice, store.ListQuery{ContextID: "burst", PageSize: 100, PageToken: res.NextPageToken}); err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Tasks...)
	}
	ties := 0
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.Updated.Equal(b.Updated) {
			ties++
		}
		if a.Updated.Before(b.Updated) || (a.Updated.Equal(b.Updated) && a.Task.ID >= b.Task.ID) {
			t.Errorf("burst order: %s (%v) before %s (%v)", a.Task.ID, a.Updated, b.Task.ID, b.Updated)
		}
	}
	if len(all) != 200 {
		t.Errorf("paging through the burst gave %d tasks, want 200", len(all))
	}
	for _, size := range []int{1, 7} {
		var paged []*store.Task
		q := store.ListQuery{ContextID: "burst", PageSize: size}
		for {
			res, err := s.List(t.Context(), alice, q)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, res.Tasks...)
			if res.NextPageToken == "" || len(paged) > 200 {
				break
			}
			q.PageToken = res.NextPageToken
		}
		diff(t, fmt.Sprintf("burst in pages of %d", size), ids(all), ids(paged))
	}
	t.Logf("%d ties in a burst of 200 concurrent Creates", ties)
}

// RunTies checks the order of tasks with equal Updated times (by ID, ascending) in List and
// in paging through it. Such ties are rare through the Store's methods, so force sets the
// Updated time of the given tasks directly, behind the store's back (each implementation's
// test provides it). open is as for Run.
func RunTies(t *testing.T, open func(t *testing.T) store.Store, force func(t *testing.T, s store.Store, ids []a2a.TaskID, updated time.Time)) {
	t.Parallel()
	s := open(t)
	for _, id := range []a2a.TaskID{"tie-c", "tie-a", "newest", "tie-d", "oldest", "tie-b"} {
		task := &store.Task{Task: newTask(id, "ctx", a2a.TaskStateWorking), Owner: alice}
		if err := s.Create(t.Context(), task, nil); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	force(t, s, []a2a.TaskID{"tie-c", "tie-a", "tie-d", "tie-b"}, at)
	force(t, s, []a2a.TaskID{"newest"}, at.Add(time.Microsecond))
	force(t, s, []a2a.TaskID{"oldest"}, at.Add(-time.Microsecond))
	want := []a2a.TaskID{"newest", "tie-a", "tie-b", "tie-c", "tie-d", "oldest"}
	for _, size := range []int{1, 2, 3, 4, 100} {
		var got []a2a.TaskID
		q := store.ListQuery{PageSize: size}
		for {
			res, err := s.List(t.Context(), alice, q)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(res.Tasks)...)
			if res.NextPageToken == "" || len(got) > len(want) {
				break
			}
			q.PageToken = res.NextPageToken
		}
		diff(t, fmt.Sprintf("ties in pages of %d", size), want, got)
	}
	res, err := s.List(t.Context(), alice, store.ListQuery{UpdatedAfter: at.Add(-time.Nanosecond)})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "UpdatedAfter just before the ties", want[:5], ids(res.Tasks))
	res, err = s.List(t.Context(), alice, store.ListQuery{UpdatedAfter: at})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "UpdatedAfter the ties", want[:1], ids(res.Tasks))
	if got := get(t, s, alice, "tie-a"); !got.Updated.Equal(at) {
		t.Errorf("forced Updated %v, read back %v", at, got.Updated)
	}
}

func testListPagination(t *testing.T, s store.Store) {
	const n = 7
	for range n {
		create(t, s, alice, "c1", a2a.TaskStateWorking)
		create(t, s, bob, "c1", a2a.TaskStateWorking) // never listed for alice
	}
	for range 3 {
		create(t, s, alice, "c2", a2a.TaskStateWorking)
	}
	full, err := s.List(t.Context(), alice, store.ListQuery{ContextID: "c1", PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Tasks) != n {
		t.Fatalf("%d tasks in context c1, want %d", len(full.Tasks), n)
	}
	for _, size := range []int{1, 2, 3, 6, 7, 8, 100} {
		var got []a2a.TaskID
		q := store.ListQuery{ContextID: "c1", PageSize: size}
		pages := 0
		for {
			res, err := s.List(t.Context(), alice, q)
			if err != nil {
				t.Fatalf("size %d page %d: %v", size, pages, err)
			}
			pages++
			if res.TotalSize != n {
				t.Errorf("size %d page %d: TotalSize %d, want %d", size, pages, res.TotalSize, n)
			}
			wantLen := min(size, n-len(got))
			if len(res.Tasks) != wantLen {
				t.Errorf("size %d page %d: %d tasks, want %d", size, pages, len(res.Tasks), wantLen)
			}
			got = append(got, ids(res.Tasks)...)
			last := len(got) >= n
			if last != (res.NextPageToken == "") {
				t.Errorf("size %d page %d: token %q on a page that is last: %v", size, pages, res.NextPageToken, last)
			}
			if res.NextPageToken == "" || pages > n+1 {
				break
			}
			q.PageToken = res.NextPageToken
		}
		diff(t, fmt.Sprintf("pages of %d", size), ids(full.Tasks), got)
		if wantPages := (n + size - 1) / size; pages != wantPages {
			t.Errorf("size %d: %d pages, want %d", size, pages, wantPages)
		}
	}
	// A token is a position: a task updated between two pages moves to the front and is not
	// seen twice.
	res, err := s.List(t.Context(), alice, store.ListQuery{ContextID: "c1", PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	tick()
	moved := res.Tasks[0]
	if err := s.Update(t.Context(), moved, nil); err != nil {
		t.Fatal(err)
	}
	rest, err := s.List(t.Context(), alice, store.ListQuery{ContextID: "c1", PageSize: 100, PageToken: res.NextPageToken})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "the page after an Update", ids(full.Tasks)[3:], ids(rest.Tasks))
}

func testListPageSize(t *testing.T, s store.Store) {
	const n = 105
	for range n {
		create(t, s, alice, "ctx", a2a.TaskStateWorking)
	}
	for _, c := range []struct{ size, want int }{{0, 50}, {1, 1}, {50, 50}, {100, 100}, {101, 100}, {1000, 100}} {
		res, err := s.List(t.Context(), alice, store.ListQuery{PageSize: c.size})
		if err != nil {
			t.Fatalf("PageSize %d: %v", c.size, err)
		}
		if len(res.Tasks) != c.want || res.TotalSize != n || res.NextPageToken == "" {
			t.Errorf("PageSize %d: %d tasks, total %d, token %q; want %d, %d and a token", c.size, len(res.Tasks), res.TotalSize, res.NextPageToken, c.want, n)
		}
	}
}

func testListBadToken(t *testing.T, s store.Store) {
	for range 3 {
		create(t, s, alice, "ctx", a2a.TaskStateWorking)
	}
	res, err := s.List(t.Context(), alice, store.ListQuery{PageSize: 1})
	if err != nil || res.NextPageToken == "" {
		t.Fatalf("first page: %v, %v", res, err)
	}
	tok := res.NextPageToken
	for _, bad := range []string{
		"garbage!", "!!!!", "Zm9v", " " + tok, tok + "=", tok[:len(tok)-1] + "*",
		"dDEuMTIzLg",      // "t1.123." (no ID)
		"dDEueHl6LnRhc2s", // "t1.xyz.task" (bad time)
		"dDIuMTIzLnRhc2s", // "t2.123.task" (unknown version)
	} {
		_, err := s.List(t.Context(), alice, store.ListQuery{PageSize: 1, PageToken: bad})
		wantErr(t, fmt.Sprintf("List with token %q", bad), err, store.ErrInvalid)
	}
}

func testActive(t *testing.T, s store.Store) {
	states := []a2a.TaskState{
		a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateUnspecified,
		a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected,
		a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired,
	}
	var want []*store.Task
	for _, owner := range []store.Owner{alice, bob, aliceT2, anon} {
		for _, st := range states {
			tick()
			task := create(t, s, owner, "ctx", st)
			if !store.IsTerminal(st) && !store.IsInterrupted(st) {
				want = append(want, task)
			}
		}
	}
	got, err := s.Active(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "Active", want, got)

	// A task that leaves the active states leaves Active; one that comes back returns.
	tick()
	leaving, returning := want[0], get(t, s, alice, want[0].Task.ID)
	leaving.Task.Status.State = a2a.TaskStateInputRequired
	if err := s.Update(t.Context(), leaving, nil); err != nil {
		t.Fatal(err)
	}
	got, err = s.Active(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "Active after a task was interrupted", ids(want[1:]), ids(got))
	returning.Version = leaving.Version
	returning.Task.Status.State = a2a.TaskStateWorking
	if err := s.Update(t.Context(), returning, nil); err != nil {
		t.Fatal(err)
	}
	got, err = s.Active(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "Active after a task resumed (ordered by Created)", ids(want), ids(got))
}

func testPushConfigs(t *testing.T, s store.Store) {
	ctx := t.Context()
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	other := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	cfgB := &a2a.PushConfig{TaskID: task.Task.ID, ID: "b", URL: "https://example.com/b", Token: "tok",
		Tenant: "t1", Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "secret"}}
	cfgA := &a2a.PushConfig{TaskID: task.Task.ID, ID: "a", URL: "https://example.com/a"}
	for _, cfg := range []*a2a.PushConfig{cfgB, cfgA} {
		if err := s.PutPushConfig(ctx, alice, cfg, store.PushLimits{}); err != nil {
			t.Fatalf("PutPushConfig(%s): %v", cfg.ID, err)
		}
	}
	got, err := s.GetPushConfig(ctx, alice, task.Task.ID, "b")
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "GetPushConfig", cfgB, got)
	got.URL = "changed" // a copy
	list, err := listConfigs(ctx, s, alice, task.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "ListPushConfigs ordered by ID", []*a2a.PushConfig{cfgA, cfgB}, list)

	// Put replaces.
	cfgA2 := &a2a.PushConfig{TaskID: task.Task.ID, ID: "a", URL: "https://example.com/a2", Token: "new"}
	if err := s.PutPushConfig(ctx, alice, cfgA2, store.PushLimits{}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetPushConfig(ctx, alice, task.Task.ID, "a"); err != nil {
		t.Fatal(err)
	} else {
		diff(t, "GetPushConfig after a replacing Put", cfgA2, got)
	}

	// Configs belong to their task.
	if list, err := listConfigs(ctx, s, alice, other.Task.ID); err != nil || len(list) != 0 {
		t.Errorf("ListPushConfigs of a task without configs: %v, %v; want empty", list, err)
	}
	_, err = s.GetPushConfig(ctx, alice, other.Task.ID, "a")
	wantErr(t, "GetPushConfig of another task's ID", err, store.ErrNotFound)
	wantErr(t, "DeletePushConfig of another task's ID", s.DeletePushConfig(ctx, alice, other.Task.ID, "a"), store.ErrNotFound)

	// Delete.
	if err := s.DeletePushConfig(ctx, alice, task.Task.ID, "a"); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetPushConfig(ctx, alice, task.Task.ID, "a")
	wantErr(t, "GetPushConfig after Delete", err, store.ErrNotFound)
	wantErr(t, "second DeletePushConfig", s.DeletePushConfig(ctx, alice, task.Task.ID, "a"), store.ErrNotFound)
	list, err = listConfigs(ctx, s, alice, task.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "ListPushConfigs after Delete", []*a2a.PushConfig{cfgB}, list)

	// Missing tasks and configs.
	_, err = s.GetPushConfig(ctx, alice, task.Task.ID, "zzz")
	wantErr(t, "GetPushConfig of a missing ID", err, store.ErrNotFound)
	wantErr(t, "PutPushConfig of a missing task",
		s.PutPushConfig(ctx, alice, &a2a.PushConfig{TaskID: "no-such-task", ID: "a", URL: "https://example.com"}, store.PushLimits{}), store.ErrNotFound)
	_, err = listConfigs(ctx, s, alice, "no-such-task")
	wantErr(t, "ListPushConfigs of a missing task", err, store.ErrNotFound)
	_, err = s.GetPushConfig(ctx, alice, "no-such-task", "a")
	wantErr(t, "GetPushConfig of a missing task", err, store.ErrNotFound)
	wantErr(t, "DeletePushConfig of a missing task", s.DeletePushConfig(ctx, alice, "no-such-task", "a"), store.ErrNotFound)

	// Updates of the task leave its configs alone.
	if err := s.Update(ctx, task, nil); err != nil {
		t.Fatal(err)
	}
	if list, err := listConfigs(ctx, s, alice, task.Task.ID); err != nil || len(list) != 1 {
		t.Errorf("ListPushConfigs after an Update: %v, %v", list, err)
	}
}

func testConcurrentCreate(t *testing.T, s store.Store) {
	const n = 8
	id := newID("race")
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		owner := []store.Owner{alice, bob}[i%2]
		task := &store.Task{Task: newTask(id, fmt.Sprint("ctx-", i), a2a.TaskStateWorking), Owner: owner}
		wg.Go(func() {
			<-start
			errs <- s.Create(t.Context(), task, []a2a.Event{statusEvent(task.Task, a2a.TaskStateWorking, "x")})
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, store.ErrExists):
		default:
			t.Errorf("racing Create: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d racing Creates of one ID succeeded, want 1", won)
	}
	a, errA := s.Get(t.Context(), alice, id)
	b, errB := s.Get(t.Context(), bob, id)
	if (errA == nil) == (errB == nil) {
		t.Fatalf("the task belongs to alice (%v) and bob (%v)", errA, errB)
	}
	winner := a
	if winner == nil {
		winner = b
	}
	if winner.LastSeq != 1 || len(events(t, s, winner.Owner, id)) != 1 {
		t.Errorf("racing Creates left %d events (LastSeq %d), want 1", len(events(t, s, winner.Owner, id)), winner.LastSeq)
	}
}

func testConcurrentUpdates(t *testing.T, s store.Store) {
	const (
		writers = 8
		rounds  = 5 // all writers race from the same version
		each    = 6 // then each writer retries until it wrote this many times
	)
	ctx := t.Context()
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking, statusEvent(newTask("x", "c", ""), a2a.TaskStateWorking, "created"))
	version := task.Version
	var want []string // event texts in log order, for the barrier rounds
	want = append(want, "created")

	// Barrier rounds: exactly one writer wins each version.
	for r := range rounds {
		start := make(chan struct{})
		type result struct {
			writer int
			t      *store.Task
			err    error
		}
		results := make(chan result, writers)
		var wg sync.WaitGroup
		for w := range writers {
			mine := &store.Task{Task: newTask(task.Task.ID, "ctx", a2a.TaskStateWorking), Owner: alice, Version: version}
			mine.Task.Metadata["writer"] = fmt.Sprint(w)
			wg.Go(func() {
				<-start
				err := s.Update(ctx, mine, []a2a.Event{
					statusEvent(mine.Task, a2a.TaskStateWorking, fmt.Sprintf("r%d-w%d-a", r, w)),
					statusEvent(mine.Task, a2a.TaskStateWorking, fmt.Sprintf("r%d-w%d-b", r, w)),
				})
				results <- result{w, mine, err}
			})
		}
		close(start)
		wg.Wait()
		close(results)
		var winners []result
		for res := range results {
			switch {
			case res.err == nil:
				winners = append(winners, res)
			case errors.Is(res.err, store.ErrConflict):
			default:
				t.Fatalf("round %d writer %d: %v", r, res.writer, res.err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d writers won version %d, want exactly 1", r, len(winners), version)
		}
		w := winners[0]
		version++
		if w.t.Version != version {
			t.Errorf("round %d: winner's Version %d, want %d", r, w.t.Version, version)
		}
		got := get(t, s, alice, task.Task.ID)
		if got.Version != version || got.Task.Metadata["writer"] != fmt.Sprint(w.writer) {
			t.Errorf("round %d: stored version %d by writer %v, want %d by %d", r, got.Version, got.Task.Metadata["writer"], version, w.writer)
		}
		want = append(want, fmt.Sprintf("r%d-w%d-a", r, w.writer), fmt.Sprintf("r%d-w%d-b", r, w.writer))
	}

	// Free for all: read, modify, write, retry on conflict. No write and no event is lost.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		versions = map[int64]int{} // version written -> writer
	)
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			done, tries := 0, 0
			for done < each {
				if tries++; tries > 100*each*writers {
					errs <- fmt.Errorf("writer %d: gave up after %d tries", w, tries)
					return
				}
				cur, err := s.Get(ctx, alice, task.Task.ID)
				if err != nil {
					errs <- err
					return
				}
				cur.Task.Metadata["writer"] = fmt.Sprint(w)
				err = s.Update(ctx, cur, []a2a.Event{statusEvent(cur.Task, a2a.TaskStateWorking, fmt.Sprintf("w%d-%d", w, done))})
				if errors.Is(err, store.ErrConflict) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				mu.Lock()
				if prev, dup := versions[cur.Version]; dup {
					errs <- fmt.Errorf("version %d written by writers %d and %d", cur.Version, prev, w)
				}
				versions[cur.Version] = w
				mu.Unlock()
				done++
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	final := get(t, s, alice, task.Task.ID)
	wantVersion := version + writers*each
	wantSeq := int64(len(want) + writers*each)
	if final.Version != wantVersion || final.LastSeq != wantSeq || len(versions) != writers*each {
		t.Errorf("final Version %d LastSeq %d (%d distinct versions written); want %d, %d and %d", final.Version, final.LastSeq, len(versions), wantVersion, wantSeq, writers*each)
	}
	evs := events(t, s, alice, task.Task.ID)
	if int64(len(evs)) != wantSeq {
		t.Fatalf("%d events, want %d", len(evs), wantSeq)
	}
	next := make([]int, writers) // each writer's events appear in its order
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the log has a gap or a duplicate", i+1, e.Seq)
		}
		txt := eventText(e.Event)
		if i < len(want) {
			if txt != want[i] {
				t.Errorf("event %d is %q, want %q", i+1, txt, want[i])
			}
			continue
		}
		var w, k int
		if _, err := fmt.Sscanf(txt, "w%d-%d", &w, &k); err != nil || w < 0 || w >= writers || k != next[w] {
			t.Errorf("event %d is %q, want writer %d's event %d", i+1, txt, w, next[min(max(w, 0), writers-1)])
			continue
		}
		next[w]++
	}
}

func testLargeTask(t *testing.T, s store.Store) {
	const size = 1 << 20
	task := newTask(newID("large"), "ctx", a2a.TaskStateWorking)
	big := &a2a.Artifact{ID: "big", Name: "1 MiB", Parts: a2a.ContentParts{
		a2a.NewRawPart(randomBytes(size, 1)),
		a2a.NewTextPart(string(randomText(size/4, 2))),
	}}
	task.Artifacts = append(task.Artifacts, big)
	st := &store.Task{Task: task, Owner: alice}
	ev := &a2a.TaskArtifactUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Artifact: big, LastChunk: true}
	if err := s.Create(t.Context(), st, []a2a.Event{ev}); err != nil {
		t.Fatal(err)
	}
	diff(t, "large task after Create", st, get(t, s, alice, task.ID))
	big2 := &a2a.Artifact{ID: "big2", Parts: a2a.ContentParts{a2a.NewRawPart(randomBytes(size, 3))}}
	task.Artifacts = append(task.Artifacts, big2)
	ev2 := &a2a.TaskArtifactUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Artifact: big2, LastChunk: true}
	if err := s.Update(t.Context(), st, []a2a.Event{ev2}); err != nil {
		t.Fatal(err)
	}
	diff(t, "large task after Update", st, get(t, s, alice, task.ID))
	evs := events(t, s, alice, task.ID)
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	diff(t, "large event 1", ev, evs[0].Event)
	diff(t, "large event 2", ev2, evs[1].Event)
	res, err := s.List(t.Context(), alice, store.ListQuery{})
	if err != nil || len(res.Tasks) != 1 {
		t.Fatalf("List: %v, %v", res, err)
	}
	diff(t, "large task in List", st, res.Tasks[0])
}

// testChunkedStream writes a task the way the engine writes a fast token stream: one artifact
// grown by 1000 appended chunks, the events written in Updates of every size from one event to
// hundreds (as many as queued up during the previous write). The task reads back identical
// after each Update, the log holds every event once, in order, without gaps, and the outbox one
// delivery per event.
func testChunkedStream(t *testing.T, s store.Store) {
	const n = 1000
	task := newTask(newID("chunks"), "ctx", a2a.TaskStateWorking)
	task.Artifacts = nil
	st := &store.Task{Task: task, Owner: alice, PushConfigs: []*a2a.PushConfig{{ID: "p", URL: "https://example.com/hook"}}}
	opening := *task // (task's fields are replaced below, never changed in place)
	if err := s.Create(t.Context(), st, []a2a.Event{&opening}); err != nil {
		t.Fatal(err)
	}
	st.PushConfigs = nil // reads leave it nil
	want := []a2a.Event{&opening}
	art := &a2a.Artifact{ID: "tokens", Name: "answer"}
	sizes := []int{1, 1, 2, 7, 64, 300, 3, 129, 1}
	for written, i := 0, 0; written < n; i++ {
		size := min(sizes[i%len(sizes)], n-written)
		batch := make([]a2a.Event, 0, size)
		for j := range size {
			k := written + j
			chunk := &a2a.Artifact{ID: art.ID, Name: art.Name, Parts: a2a.ContentParts{a2a.NewTextPart(fmt.Sprintf("tok%d ", k))}}
			ev := &a2a.TaskArtifactUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Artifact: chunk, Append: k > 0, LastChunk: k == n-1}
			merged := *art
			merged.Parts = append(append(a2a.ContentParts(nil), art.Parts...), chunk.Parts...)
			art = &merged
			batch = append(batch, ev)
		}
		task.Artifacts = []*a2a.Artifact{art}
		if written+size == n {
			done := statusEvent(task, a2a.TaskStateCompleted, "")
			task.Status = done.Status
			batch = append(batch, done)
		}
		if err := s.Update(t.Context(), st, batch); err != nil {
			t.Fatalf("Update of %d events after %d: %v", len(batch), written, err)
		}
		want = append(want, batch...)
		written += size
		if st.LastSeq != int64(len(want)) {
			t.Fatalf("LastSeq = %d after %d events, want %d", st.LastSeq, len(want), len(want))
		}
		diff(t, fmt.Sprintf("task after %d chunks", written), st, get(t, s, alice, task.ID))
	}
	if got := len(get(t, s, alice, task.ID).Task.Artifacts[0].Parts); got != n {
		t.Errorf("artifact has %d parts, want %d", got, n)
	}
	evs := events(t, s, alice, task.ID)
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has Seq %d, want %d", i, ev.Seq, i+1)
		}
		diff(t, fmt.Sprintf("event %d", ev.Seq), want[i], ev.Event)
	}
	// Paging through the log from the middle of a write gives the same events.
	page, err := s.Events(t.Context(), alice, task.ID, 500, 10)
	if err != nil || len(page) != 10 || page[0].Seq != 501 {
		t.Fatalf("Events(after 500, limit 10) = %d events from %v, %v; want 10 from 501", len(page), page, err)
	}
	seen := map[int64]bool{}
	for {
		ds, err := s.ClaimDeliveries(t.Context(), store.ClaimQuery{Limit: 100, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			if seen[d.Seq] {
				t.Fatalf("delivery of event %d claimed twice", d.Seq)
			}
			seen[d.Seq] = true
			if err := s.CompleteDelivery(t.Context(), d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d deliveries, want one per event: %d", len(seen), len(want))
	}
}

// randomText returns n printable ASCII characters.
func randomText(n int, seed uint64) []byte {
	b := randomBytes(n, seed)
	for i := range b {
		b[i] = ' ' + b[i]%95
	}
	return b
}

func testContextCanceled(t *testing.T, s store.Store) {
	existing := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	if err := s.PutPushConfig(t.Context(), alice, &a2a.PushConfig{TaskID: existing.Task.ID, ID: "a", URL: "https://example.com"}, store.PushLimits{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{ctx, context.Canceled}, {expired, context.DeadlineExceeded}} {
		ctx := c.ctx
		fresh := &store.Task{Task: newTask(newID("task"), "ctx", a2a.TaskStateWorking), Owner: alice}
		upd := *existing
		calls := []struct {
			name string
			call func() error
		}{
			{"Create", func() error { return s.Create(ctx, fresh, nil) }},
			{"Update", func() error { return s.Update(ctx, &upd, nil) }},
			{"Get", func() error { _, err := s.Get(ctx, alice, existing.Task.ID); return err }},
			{"List", func() error { _, err := s.List(ctx, alice, store.ListQuery{}); return err }},
			{"Events", func() error { _, err := s.Events(ctx, alice, existing.Task.ID, 0, 0); return err }},
			{"Active", func() error { _, err := s.Active(ctx); return err }},
			{"PutPushConfig", func() error {
				return s.PutPushConfig(ctx, alice, &a2a.PushConfig{TaskID: existing.Task.ID, ID: "b", URL: "https://example.com"}, store.PushLimits{})
			}},
			{"GetPushConfig", func() error { _, err := s.GetPushConfig(ctx, alice, existing.Task.ID, "a"); return err }},
			{"ListPushConfigs", func() error { _, err := listConfigs(ctx, s, alice, existing.Task.ID); return err }},
			{"DeletePushConfig", func() error { return s.DeletePushConfig(ctx, alice, existing.Task.ID, "a") }},
		}
		calls = append(calls, leaseCalls(ctx, s, existing.Task.ID)...)
		for _, call := range calls {
			wantErr(t, call.name+" with a done context", call.call(), c.want)
		}
		_, err := s.Get(t.Context(), alice, fresh.Task.ID)
		wantErr(t, "Get of a task created with a done context", err, store.ErrNotFound)
	}
	if got := get(t, s, alice, existing.Task.ID); got.Version != 1 {
		t.Errorf("Update with a done context wrote version %d", got.Version)
	}
	if cfgs, err := listConfigs(t.Context(), s, alice, existing.Task.ID); err != nil || len(cfgs) != 1 {
		t.Errorf("push configs after calls with a done context: %v, %v; want the one", cfgs, err)
	}
}

func testClose(t *testing.T, s store.Store) {
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Get(t.Context(), alice, task.Task.ID); err == nil {
		t.Error("Get after Close succeeded")
	}
	if err := s.Create(t.Context(), &store.Task{Task: newTask(newID("task"), "ctx", a2a.TaskStateWorking), Owner: alice}, nil); err == nil {
		t.Error("Create after Close succeeded")
	}
	if _, err := s.Active(t.Context()); err == nil {
		t.Error("Active after Close succeeded")
	}
	for _, c := range leaseCalls(t.Context(), s, task.Task.ID) {
		if err := c.call(); err == nil {
			t.Errorf("%s after Close succeeded", c.name)
		}
	}
	_ = s.Close() // harmless
}

// listConfigs returns the first page of a task's push configs (every one, for fewer than 100).
func listConfigs(ctx context.Context, s store.Store, owner store.Owner, task a2a.TaskID) ([]*a2a.PushConfig, error) {
	p, err := s.ListPushConfigs(ctx, owner, task, store.PushConfigQuery{})
	if err != nil {
		return nil, err
	}
	return p.Configs, nil
}
