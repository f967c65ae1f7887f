package agents

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// A "wait" task handed over by a replica that shuts down is resumed by the next one where it
// stood: its log reports each second once, in order, then the result. Any other task is not
// resumed (RecoverTask answers nothing, and the engine fails it).
func TestBuiltinWaitResumes(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	b := &Builtin{Tick: 20 * time.Millisecond}
	newReplica := func(name string) *engine.Engine {
		return engine.New(b, st, &engine.Options{Logger: slog.New(slog.DiscardHandler),
			Cluster: &engine.Cluster{Replica: name, LeaseTTL: time.Hour}})
	}
	ctx, cc := a2asrv.NewCallContext(t.Context(), nil)
	cc.User = &a2asrv.User{Name: "alice", Authenticated: true}
	first := newReplica("first")
	res, err := first.SendMessage(ctx, &a2a.SendMessageRequest{Message: userMessage("", "wait 5"),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2a.Task).ID
	owner := store.Owner{Principal: "alice"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		rec, err := st.Get(ctx, owner, id)
		if err == nil && strings.HasPrefix(textOf(rec.Task.Status.Message), "1/5") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task never reported its first second")
		}
	}
	if err := first.Close(ctx); err != nil { // hands the task over
		t.Fatal(err)
	}
	second := newReplica("second")
	defer second.Close(context.Background())
	if n, err := second.Recover(ctx); err != nil || n != 1 {
		t.Fatalf("Recover() = %d, %v; want the handed-over task", n, err)
	}
	var rec *store.Task
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if rec, err = st.Get(ctx, owner, id); err == nil && rec.Task.Status.State == a2a.TaskStateCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed task did not complete: %+v", rec.Task.Status)
		}
	}
	events, err := st.Events(ctx, owner, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range events {
		switch x := ev.Event.(type) {
		case *a2a.TaskStatusUpdateEvent:
			got = append(got, textOf(x.Status.Message))
		case *a2a.TaskArtifactUpdateEvent:
			got = append(got, "artifact "+x.Artifact.Name)
		}
	}
	want := []string{"Waiting 5 seconds."}
	for i := 1; i <= 5; i++ {
		want = append(want, fmt.Sprintf("%d/5 seconds elapsed.", i))
	}
	want = append(want, "artifact wait-result", "Done: waited 5 seconds.")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the task's log (-want +got):\n%s", diff)
	}

	// A task that is not a "wait" is not the agent's to resume.
	if evs, err := b.RecoverTask(ctx, &a2a.Task{History: []*a2a.Message{userMessage("", "ask")}}); err != nil || evs != nil {
		t.Errorf("RecoverTask(ask) = %v, %v; want nothing", evs, err)
	}
}

func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return MessageText(m)
}
