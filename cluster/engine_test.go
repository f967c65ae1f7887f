package cluster_test

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/cluster"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/clustertest"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

var quiet = slog.New(slog.DiscardHandler)

// gated yields working, then "step i" for i = 1…N each time the test calls step, then
// completed: "steps N".
type gated struct {
	once sync.Once
	next chan struct{}
}

func (g *gated) gate() chan struct{} {
	g.once.Do(func() { g.next = make(chan struct{}, 256) })
	return g.next
}

func (g *gated) step() { g.gate() <- struct{}{} }

func (g *gated) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var n int
		fmt.Sscanf(ec.Message.Parts[0].Text(), "steps %d", &n)
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		for i := 1; i <= n; i++ {
			select {
			case <-g.gate():
			case <-ctx.Done():
				return
			}
			m := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(fmt.Sprint("step ", i)))
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, m), nil) {
				return
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (g *gated) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// replica is an engine in cluster mode on st, with a fan-out on url's stream.
func replica(t *testing.T, exec a2asrv.AgentExecutor, st store.Store, name, url, stream string, poll time.Duration) *engine.Engine {
	t.Helper()
	f, err := cluster.Connect(t.Context(), url, &cluster.Options{Stream: stream, Logger: quiet, ReconnectWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(exec, st, &engine.Options{Logger: quiet,
		Cluster: &engine.Cluster{Replica: name, LeaseTTL: time.Hour, Fanout: f, Poll: poll}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Close(ctx)
		f.Close()
	})
	return e
}

func as(ctx context.Context, name string) context.Context {
	ctx, cc := a2asrv.NewCallContext(ctx, nil)
	cc.User = &a2asrv.User{Name: name, Authenticated: true}
	return ctx
}

// follow subscribes to task on e and returns its events as they come, and the stream's end.
func follow(t *testing.T, e *engine.Engine, ctx context.Context, id a2a.TaskID) (events func() []a2a.Event, done <-chan error) {
	t.Helper()
	var mu sync.Mutex
	var got []a2a.Event
	end := make(chan error, 1)
	first := make(chan struct{})
	go func() {
		var err error
		for ev, e := range e.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
			if e != nil {
				err = e
				break
			}
			mu.Lock()
			got = append(got, ev)
			if len(got) == 1 {
				close(first)
			}
			mu.Unlock()
		}
		end <- err
	}()
	select {
	case <-first:
	case err := <-end:
		t.Fatalf("subscription ended before its first event: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no first event on the subscription in a minute")
	}
	return func() []a2a.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]a2a.Event(nil), got...)
	}, end
}

// texts are a stream's status messages after its first event, each with its sequence number.
func texts(t *testing.T, evs []a2a.Event) []string {
	t.Helper()
	var out []string
	prev := int64(-1)
	for _, ev := range evs {
		var meta map[string]any
		switch x := ev.(type) {
		case *a2a.Task:
			meta = x.Metadata
		case *a2a.TaskStatusUpdateEvent:
			meta = x.Metadata
			s := string(x.Status.State)
			if x.Status.Message != nil {
				s = x.Status.Message.Parts[0].Text()
			}
			out = append(out, s)
		}
		seq, _ := meta[engine.SeqKey].(int64)
		if prev >= 0 && seq != prev+1 {
			t.Errorf("sequence number %d after %d: a gap or a repeat", seq, prev)
		}
		prev = seq
	}
	return out
}

// saw reports whether a status the stream carried says want.
func saw(t *testing.T, evs func() []a2a.Event, want string) func() bool {
	return func() bool { return slices.Contains(texts(t, evs()), want) }
}

func steps(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint("step ", i))
	}
	return out
}

func startTask(t *testing.T, e *engine.Engine, ctx context.Context, n int) a2a.TaskID {
	t.Helper()
	res, err := e.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(fmt.Sprint("steps ", n))),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	return res.(*a2a.Task).ID
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A stream on one replica of a task running on another gets every event through NATS, in
// order, each once — with the store polls off, so NATS is all it has.
func TestStreamsCrossReplicasThroughNATS(t *testing.T) {
	t.Parallel()
	url := clustertest.NATS(t)
	stream := clustertest.Name("A2ATEST")
	st := memory.New()
	defer st.Close()
	ex := &gated{}
	a := replica(t, ex, st, "a", url, stream, time.Hour)
	b := replica(t, ex, st, "b", url, stream, time.Hour)
	ctx := as(t.Context(), "alice")
	id := startTask(t, a, ctx, 20)
	evs, done := follow(t, b, ctx, id)
	for i := 1; i <= 20; i++ {
		ex.step()
		waitFor(t, fmt.Sprint("step ", i, " on b"), saw(t, evs, fmt.Sprint("step ", i)))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the stream on b did not end; it has %q", texts(t, evs()))
	}
	want := append(append([]string{"TASK_STATE_WORKING"}, steps(1, 20)...), "TASK_STATE_COMPLETED")
	got := texts(t, evs())
	if len(got) > 0 && got[0] != "TASK_STATE_WORKING" { // the subscription may open after it
		want = want[1:]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream on b (-want +got):\n%s", diff)
	}
}

// NATS restarted in the middle of a stream: the stream on the other replica carries on once
// NATS is back, with the events written meanwhile, in order, without a gap; the store lost
// nothing. With NATS gone for good, the store's polls carry the stream to its end.
func TestNATSRestartDuringStreaming(t *testing.T) {
	t.Parallel()
	for _, back := range []bool{true, false} {
		t.Run(fmt.Sprint("back=", back), func(t *testing.T) {
			t.Parallel()
			srv := clustertest.PrivateNATS(t)
			st := memory.New()
			defer st.Close()
			ex := &gated{}
			poll := time.Hour // NATS alone carries the stream...
			if !back {
				poll = 50 * time.Millisecond // ...or, without it, the store's polls
			}
			a := replica(t, ex, st, "a", srv.URL(), "A2ATEST", poll)
			b := replica(t, ex, st, "b", srv.URL(), "A2ATEST", poll)
			ctx := as(t.Context(), "alice")
			id := startTask(t, a, ctx, 9)
			evs, done := follow(t, b, ctx, id)
			for range 3 {
				ex.step()
			}
			waitFor(t, "the first steps on b", saw(t, evs, "step 3"))
			srv.Stop()
			for range 3 {
				ex.step() // written to the store while NATS is down
			}
			owner := store.Owner{Principal: "alice"}
			waitFor(t, "the steps written while NATS is down", func() bool {
				rec, err := st.Get(ctx, owner, id)
				return err == nil && rec.Task.Status.Message != nil && rec.Task.Status.Message.Parts[0].Text() == "step 6"
			})
			if back {
				srv.Start()
				waitFor(t, "b to see NATS again", func() bool { return b.Ready(ctx) == nil })
			}
			for range 3 {
				ex.step()
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the stream on b did not end; it has %q", texts(t, evs()))
			}
			got := texts(t, evs())
			want := append(steps(1, 9), "TASK_STATE_COMPLETED")
			if len(got) > 0 && got[0] == "TASK_STATE_WORKING" {
				want = append([]string{"TASK_STATE_WORKING"}, want...)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stream on b across the NATS outage (-want +got):\n%s", diff)
			}
			logged, err := st.Events(ctx, owner, id, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(logged); n != 1+1+9+1 { // the task, working, the steps, completed
				t.Errorf("the store holds %d events, want %d", n, 12)
			}
		})
	}
}
