package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// fakePusher refuses URLs containing "internal" and counts wake-ups.
type fakePusher struct{ wakes atomic.Int64 }

func (p *fakePusher) CheckURL(_ context.Context, u string) error {
	if strings.Contains(u, "internal") {
		return errors.New("push: address not allowed")
	}
	return nil
}

func (p *fakePusher) Wake() { p.wakes.Add(1) }

func TestPushConfigURLChecked(t *testing.T) {
	t.Parallel()
	st := memory.New()
	p := &fakePusher{}
	e := engine.New(&scripted{}, st, &engine.Options{Push: p})
	t.Cleanup(func() { e.Close(context.Background()); st.Close() })
	ctx := t.Context()

	_, err := e.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi")),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "http://internal/hook"}}})
	if !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("SendMessage with a refused inline push URL: %v, want InvalidParams", err)
	}
	if res, err := st.List(ctx, ownerAnon, listAll); err != nil || len(res.Tasks) != 0 {
		t.Errorf("a refused SendMessage created %d tasks (%v)", len(res.Tasks), err)
	}

	res, err := e.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	_, err = e.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, URL: "http://internal/hook"})
	if !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("CreateTaskPushConfig(refused URL) = %v, want InvalidParams", err)
	}
	if p.wakes.Load() == 0 {
		t.Error("the engine never woke its Pusher")
	}
}

// An inline push config gets every event of the task it creates, the first one included.
func TestInlinePushConfigGetsFirstEvents(t *testing.T) {
	t.Parallel()
	st := memory.New()
	e := engine.New(&scripted{}, st, &engine.Options{Push: &fakePusher{}})
	t.Cleanup(func() { e.Close(context.Background()); st.Close() })
	res, err := e.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "https://example.com/hook"}}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	evs, err := st.Events(t.Context(), ownerAnon, task.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := st.ClaimDeliveries(t.Context(), store.ClaimQuery{Limit: 100, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != len(evs) || len(ds) == 0 || ds[0].Seq != 1 {
		t.Fatalf("%d deliveries (first %v) for %d events; want one per event from seq 1", len(ds), ds, len(evs))
	}
	for _, d := range ds {
		if d.Config.URL != "https://example.com/hook" || d.Config.TaskID != task.ID {
			t.Errorf("delivery to %+v", d.Config)
		}
	}
}

var (
	ownerAnon = store.Owner{}
	listAll   = store.ListQuery{}
)
