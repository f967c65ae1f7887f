package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// askTask starts a task that waits for input, as principal who.
func askTask(t *testing.T, e *engine.Engine, ctx context.Context) a2a.TaskID {
	t.Helper()
	res, err := e.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask"))})
	if err != nil {
		t.Fatal(err)
	}
	return res.(*a2a.Task).ID
}

// TestPushConfigLimits: a task's configs and a principal's are bounded, on every way a config
// is created (CreateTaskPushConfig, inline with a new task, inline with a follow-up), with a
// clear INVALID_PARAMS; another principal is not affected.
func TestPushConfigLimits(t *testing.T) {
	t.Parallel()
	st := memory.New()
	e := engine.New(&scripted{}, st, &engine.Options{Push: &fakePusher{}, PushConfigLimits: store.PushLimits{PerTask: 2, PerOwner: 3}})
	t.Cleanup(func() { e.Close(context.Background()); st.Close() })
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	create := func(ctx context.Context, task a2a.TaskID, id string) error {
		_, err := e.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task, ID: id, URL: "https://example.com/" + id})
		return err
	}
	refused := func(what string, err error, words string) {
		t.Helper()
		if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v; want INVALID_PARAMS saying %q", what, err, words)
		}
	}

	t1 := askTask(t, e, alice)
	for _, id := range []string{"a", "b"} {
		if err := create(alice, t1, id); err != nil {
			t.Fatalf("config %s: %v", id, err)
		}
	}
	refused("a third config of a task", create(alice, t1, "c"), "2 push notification configs, the most this server allows per task")
	if err := create(alice, t1, "a"); err != nil {
		t.Errorf("replacing a config at the limit: %v", err)
	}

	// The follow-up message's inline config counts too, and a refused one resumes nothing.
	_, err := e.SendMessage(alice, &a2a.SendMessageRequest{Message: &a2a.Message{ID: "m2", Role: a2a.MessageRoleUser, TaskID: t1, Parts: a2a.ContentParts{a2a.NewTextPart("resume")}},
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{ID: "c", URL: "https://example.com/c"}}})
	refused("a follow-up's inline config past the task's limit", err, "per task")
	if got, err := e.GetTask(alice, &a2a.GetTaskRequest{ID: t1}); err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("the refused follow-up changed the task: %v, %v", got, err)
	}

	t2 := askTask(t, e, alice)
	if err := create(alice, t2, "a"); err != nil {
		t.Fatal(err)
	}
	refused("a fourth config of alice", create(alice, t2, "b"), "3 push notification configs, the most this server allows per principal")
	// A new task's inline config is checked before the task starts: no task is created.
	before, _ := st.List(t.Context(), store.Owner{Principal: "alice"}, listAll)
	_, err = e.SendMessage(alice, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "https://example.com/new"}}})
	refused("a new task's inline config past alice's limit", err, "per principal")
	if after, _ := st.List(t.Context(), store.Owner{Principal: "alice"}, listAll); after.TotalSize != before.TotalSize {
		t.Errorf("a refused send created a task: %d tasks, then %d", before.TotalSize, after.TotalSize)
	}

	// Bob is another principal: his own count.
	tb := askTask(t, e, bob)
	for _, id := range []string{"a", "b"} {
		if err := create(bob, tb, id); err != nil {
			t.Errorf("bob's config %s: %v", id, err)
		}
	}

	// Once a task is over, its configs no longer count.
	if _, err := e.CancelTask(alice, &a2a.CancelTaskRequest{ID: t1}); err != nil {
		t.Fatal(err)
	}
	if err := create(alice, t2, "b"); err != nil {
		t.Errorf("a config once alice's other task was canceled: %v", err)
	}
}

// TestPushConfigLimitDefaults: zero limits mean the defaults, negative ones none.
func TestPushConfigLimitDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lim  store.PushLimits
		want int // configs one task takes
	}{
		{store.PushLimits{}, engine.DefaultPushConfigsPerTask},
		{store.PushLimits{PerTask: -1, PerOwner: -1}, engine.DefaultPushConfigsPerTask + 5},
	} {
		st := memory.New()
		e := engine.New(&scripted{}, st, &engine.Options{Push: &fakePusher{}, PushConfigLimits: tc.lim})
		id := askTask(t, e, t.Context())
		n := 0
		for i := range engine.DefaultPushConfigsPerTask + 5 {
			if _, err := e.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: id, ID: fmt.Sprint(i), URL: "https://example.com/"}); err == nil {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("limits %+v: a task took %d configs, want %d", tc.lim, n, tc.want)
		}
		e.Close(context.Background())
		st.Close()
	}
}

// TestPushConfigFields: a token or authentication that cannot be an HTTP header value is
// refused when the config is created, inline or not.
func TestPushConfigFields(t *testing.T) {
	t.Parallel()
	st := memory.New()
	e := engine.New(&scripted{}, st, &engine.Options{Push: &fakePusher{}})
	t.Cleanup(func() { e.Close(context.Background()); st.Close() })
	id := askTask(t, e, t.Context())
	long := strings.Repeat("x", 8<<10+1)
	for _, tc := range []struct {
		name string
		cfg  a2a.PushConfig
		ok   bool
	}{
		{"plain", a2a.PushConfig{Token: "tok-123", Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "abc.def=="}}, true},
		{"tab in token", a2a.PushConfig{Token: "a\tb"}, true},
		{"CRLF in token", a2a.PushConfig{Token: "tok\r\nX-Injected: 1"}, false},
		{"LF in token", a2a.PushConfig{Token: "tok\nx"}, false},
		{"CR in token", a2a.PushConfig{Token: "tok\rx"}, false},
		{"NUL in token", a2a.PushConfig{Token: "tok\x00"}, false},
		{"DEL in token", a2a.PushConfig{Token: "tok\x7f"}, false},
		{"CRLF in credentials", a2a.PushConfig{Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "x\r\nHost: evil"}}, false},
		{"space in scheme", a2a.PushConfig{Auth: &a2a.PushAuthInfo{Scheme: "Bearer x", Credentials: "y"}}, false},
		{"LF in scheme", a2a.PushConfig{Auth: &a2a.PushAuthInfo{Scheme: "Bearer\n"}}, false},
		{"LF in URL", a2a.PushConfig{URL: "https://example.com/\nhook"}, false},
		{"long token", a2a.PushConfig{Token: long}, false},
		{"long credentials", a2a.PushConfig{Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: long}}, false},
	} {
		cfg := tc.cfg
		if cfg.URL == "" {
			cfg.URL = "https://example.com/hook"
		}
		cfg.TaskID = id
		_, err := e.CreateTaskPushConfig(t.Context(), &cfg)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, a2a.ErrInvalidParams)) {
			t.Errorf("CreateTaskPushConfig(%s) = %v; want ok %v, else INVALID_PARAMS", tc.name, err, tc.ok)
		}
		inline := cfg
		inline.TaskID = ""
		_, err = e.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
			Config: &a2a.SendMessageConfig{PushConfig: &inline}})
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, a2a.ErrInvalidParams)) {
			t.Errorf("SendMessage with inline %s = %v; want ok %v, else INVALID_PARAMS", tc.name, err, tc.ok)
		}
	}
}

// TestListPushConfigsPages: pageSize and pageToken reach the store, and nextPageToken comes
// back.
func TestListPushConfigsPages(t *testing.T) {
	t.Parallel()
	st := memory.New()
	e := engine.New(&scripted{}, st, &engine.Options{Push: &fakePusher{}})
	t.Cleanup(func() { e.Close(context.Background()); st.Close() })
	id := askTask(t, e, t.Context())
	for i := range 5 {
		if _, err := e.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: id, ID: fmt.Sprint("c", i), URL: "https://example.com/"}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	req := &a2a.ListTaskPushConfigRequest{TaskID: id, PageSize: 2}
	for pages := 1; ; pages++ {
		res, err := e.ListTaskPushConfigs(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Configs) > 2 {
			t.Errorf("page %d: %d configs, want at most 2", pages, len(res.Configs))
		}
		for _, c := range res.Configs {
			got = append(got, c.ID)
		}
		if res.NextPageToken == "" {
			if pages != 3 {
				t.Errorf("%d pages, want 3", pages)
			}
			break
		}
		req.PageToken = res.NextPageToken
	}
	if strings.Join(got, ",") != "c0,c1,c2,c3,c4" {
		t.Errorf("configs over the pages: %v", got)
	}
	for _, bad := range []*a2a.ListTaskPushConfigRequest{{TaskID: id, PageSize: -1}, {TaskID: id, PageToken: "garbage!"}} {
		if _, err := e.ListTaskPushConfigs(t.Context(), bad); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("ListTaskPushConfigs(%+v) = %v; want INVALID_PARAMS", bad, err)
		}
	}
}
