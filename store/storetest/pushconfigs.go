package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// putConfigs stores configs c000, c001, … of a task, without limits.
func putConfigs(t *testing.T, s store.Store, owner store.Owner, task a2a.TaskID, n int) {
	t.Helper()
	for i := range n {
		cfg := &a2a.PushConfig{TaskID: task, ID: fmt.Sprintf("c%03d", i), URL: "https://example.com/" + fmt.Sprint(i)}
		if err := s.PutPushConfig(t.Context(), owner, cfg, store.PushLimits{}); err != nil {
			t.Fatalf("PutPushConfig(%s): %v", cfg.ID, err)
		}
	}
}

func configIDs(cfgs []*a2a.PushConfig) []string {
	out := []string{}
	for _, c := range cfgs {
		out = append(out, c.ID)
	}
	return out
}

// testPushConfigPages: ListPushConfigs pages by ID, tokens are positions, the page size is
// capped at 100 and 0 means 100, and bad arguments are ErrInvalid.
func testPushConfigPages(t *testing.T, s store.Store) {
	ctx := t.Context()
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	putConfigs(t, s, alice, task.Task.ID, 7)

	var got []string
	var pages int
	q := store.PushConfigQuery{PageSize: 3}
	for {
		p, err := s.ListPushConfigs(ctx, alice, task.Task.ID, q)
		if err != nil {
			t.Fatalf("ListPushConfigs(%+v): %v", q, err)
		}
		pages++
		if len(p.Configs) > 3 {
			t.Errorf("page %d has %d configs, want at most 3", pages, len(p.Configs))
		}
		got = append(got, configIDs(p.Configs)...)
		if p.NextPageToken == "" {
			break
		}
		if pages == 1 {
			// A config created between two pages, after the position, is on a later page;
			// one before it is not.
			for _, id := range []string{"c0035", "a-first"} {
				if err := s.PutPushConfig(ctx, alice, &a2a.PushConfig{TaskID: task.Task.ID, ID: id, URL: "https://example.com/x"}, store.PushLimits{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		q.PageToken = p.NextPageToken
		// The token is a position of this task, not a capability: another owner gets nothing.
		_, err = s.ListPushConfigs(ctx, bob, task.Task.ID, q)
		wantErr(t, "ListPushConfigs of another owner with a token", err, store.ErrNotFound)
	}
	diff(t, "ListPushConfigs pages of 3", []string{"c000", "c001", "c002", "c003", "c0035", "c004", "c005", "c006"}, got)
	if pages != 3 {
		t.Errorf("%d pages, want 3", pages)
	}

	all, err := s.ListPushConfigs(ctx, alice, task.Task.ID, store.PushConfigQuery{})
	if err != nil || all.NextPageToken != "" || len(all.Configs) != 9 {
		t.Errorf("ListPushConfigs(page size 0) = %d configs, token %q, %v; want 9, none", len(all.Configs), all.NextPageToken, err)
	}
	exact, err := s.ListPushConfigs(ctx, alice, task.Task.ID, store.PushConfigQuery{PageSize: 9})
	if err != nil || exact.NextPageToken != "" || len(exact.Configs) != 9 {
		t.Errorf("ListPushConfigs(page size 9 of 9) = %d configs, token %q, %v; want 9, no token", len(exact.Configs), exact.NextPageToken, err)
	}

	big := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	putConfigs(t, s, alice, big.Task.ID, 101)
	for _, size := range []int{0, 100, 1000} {
		p, err := s.ListPushConfigs(ctx, alice, big.Task.ID, store.PushConfigQuery{PageSize: size})
		if err != nil || len(p.Configs) != 100 || p.NextPageToken == "" {
			t.Fatalf("ListPushConfigs(page size %d of 101) = %d configs, token %q, %v; want 100 and a token", size, len(p.Configs), p.NextPageToken, err)
		}
		rest, err := s.ListPushConfigs(ctx, alice, big.Task.ID, store.PushConfigQuery{PageSize: size, PageToken: p.NextPageToken})
		if err != nil || len(rest.Configs) != 1 || rest.Configs[0].ID != "c100" || rest.NextPageToken != "" {
			t.Errorf("second page (size %d) = %v, %q, %v; want [c100], no token", size, configIDs(rest.Configs), rest.NextPageToken, err)
		}
	}

	_, err = s.ListPushConfigs(ctx, alice, task.Task.ID, store.PushConfigQuery{PageSize: -1})
	wantErr(t, "ListPushConfigs(page size -1)", err, store.ErrInvalid)
	// Not base64; a task-list token; "p1." with no ID; "p1.\x00"; "p1.\xff".
	for _, tok := range []string{"not base64!", "dDEuMTIzLngx", "cDEu", "cDEuAA", "cDEu_w"} {
		_, err = s.ListPushConfigs(ctx, alice, task.Task.ID, store.PushConfigQuery{PageToken: tok})
		wantErr(t, fmt.Sprintf("ListPushConfigs(token %q)", tok), err, store.ErrInvalid)
	}
	empty := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	if p, err := s.ListPushConfigs(ctx, alice, empty.Task.ID, store.PushConfigQuery{}); err != nil || p.Configs == nil || len(p.Configs) != 0 || p.NextPageToken != "" {
		t.Errorf("ListPushConfigs of a task without configs = %+v, %v; want an empty, non-nil page", p, err)
	}
}

// testPushLimits: PutPushConfig refuses a config past PerTask or PerOwner with a *LimitError,
// never a replacement; only live tasks count towards PerOwner; principals count apart.
func testPushLimits(t *testing.T, s store.Store) {
	ctx := t.Context()
	lim := store.PushLimits{PerTask: 3, PerOwner: 5}
	put := func(owner store.Owner, task a2a.TaskID, id string) error {
		return s.PutPushConfig(ctx, owner, &a2a.PushConfig{TaskID: task, ID: id, URL: "https://example.com/" + id}, lim)
	}
	t1 := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	t2 := create(t, s, alice, "ctx", a2a.TaskStateInputRequired) // interrupted tasks count
	for _, id := range []string{"a", "b", "c"} {
		if err := put(alice, t1.Task.ID, id); err != nil {
			t.Fatalf("put %s: %v", id, err)
		}
	}
	err := put(alice, t1.Task.ID, "d")
	var le *store.LimitError
	if !errors.As(err, &le) || !le.PerTask || le.Limit != 3 || !errors.Is(err, store.ErrLimit) {
		t.Errorf("a fourth config of a task with PerTask 3: %v; want a *LimitError PerTask 3", err)
	}
	if err := put(alice, t1.Task.ID, "b"); err != nil {
		t.Errorf("replacing a config at the limit: %v", err)
	}
	for _, id := range []string{"a", "b"} {
		if err := put(alice, t2.Task.ID, id); err != nil {
			t.Fatalf("put %s on the second task: %v", id, err)
		}
	}
	if n, err := s.CountPushConfigs(ctx, alice); err != nil || n != 5 {
		t.Errorf("CountPushConfigs(alice) = %d, %v; want 5", n, err)
	}
	err = put(alice, t2.Task.ID, "c")
	if !errors.As(err, &le) || le.PerTask || le.Limit != 5 {
		t.Errorf("a sixth config of alice with PerOwner 5: %v; want a *LimitError PerOwner 5", err)
	}
	if cfgs, _ := listConfigs(ctx, s, alice, t2.Task.ID); len(cfgs) != 2 {
		t.Errorf("a refused config was stored: %v", configIDs(cfgs))
	}
	// Bob has his own count.
	tb := create(t, s, bob, "ctx", a2a.TaskStateWorking)
	if err := put(bob, tb.Task.ID, "a"); err != nil {
		t.Errorf("bob's first config: %v", err)
	}
	// A finished task's configs receive nothing more: they no longer count.
	t1.Task.Status.State = a2a.TaskStateCompleted
	if err := s.Update(ctx, t1, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountPushConfigs(ctx, alice); err != nil || n != 2 {
		t.Errorf("CountPushConfigs(alice) after a task completed = %d, %v; want 2", n, err)
	}
	if err := put(alice, t2.Task.ID, "c"); err != nil {
		t.Errorf("a config once a task completed: %v", err)
	}
	// No limits: anything goes.
	if err := s.PutPushConfig(ctx, alice, &a2a.PushConfig{TaskID: t1.Task.ID, ID: "z", URL: "https://example.com/z"}, store.PushLimits{}); err != nil {
		t.Errorf("PutPushConfig without limits: %v", err)
	}
	// The owner's limit does not hide that a task is someone else's.
	wantErr(t, "PutPushConfig on bob's task", put(alice, tb.Task.ID, "x"), store.ErrNotFound)
}

// testConcurrentPushLimits: creations racing for the last places of a limit take exactly
// those places.
func testConcurrentPushLimits(t *testing.T, s store.Store) {
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	other := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	const n, perTask, perOwner = 16, 5, 8
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tid := task.Task.ID
			if i%2 == 1 {
				tid = other.Task.ID
			}
			err := s.PutPushConfig(t.Context(), alice, &a2a.PushConfig{TaskID: tid, ID: fmt.Sprint("r", i), URL: "https://example.com/"},
				store.PushLimits{PerTask: perTask, PerOwner: perOwner})
			switch {
			case err == nil:
				ok.Add(1)
			case !errors.Is(err, store.ErrLimit):
				t.Errorf("PutPushConfig: %v", err)
			}
		})
	}
	wg.Wait()
	if got, _ := s.CountPushConfigs(t.Context(), alice); ok.Load() != perOwner || got != perOwner {
		t.Errorf("%d of %d racing creations succeeded, %d stored; want %d (PerOwner)", ok.Load(), n, got, perOwner)
	}
	for _, id := range []a2a.TaskID{task.Task.ID, other.Task.ID} {
		if cfgs, _ := listConfigs(t.Context(), s, alice, id); len(cfgs) > perTask {
			t.Errorf("task %s has %d configs, over PerTask %d", id, len(cfgs), perTask)
		}
	}
}
