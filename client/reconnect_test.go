package client_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// dialCounter counts WebSocket upgrades: each dial of the capnweb transport is one.
type dialCounter struct{ n atomic.Int64 }

func (d *dialCounter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			d.n.Add(1)
		}
		next.ServeHTTP(w, r)
	})
}

// A stream goes on across dropped connections, with no event lost or repeated: the transport
// redials and resubscribes after the last event it delivered.
func TestStreamSurvivesDrop(t *testing.T) {
	t.Parallel()
	const steps = 6
	drops := []struct {
		name string
		drop func(*a2atest.Server, *client.Client) bool
	}{
		{"server cuts TCP", func(s *a2atest.Server, _ *client.Client) bool { return s.DropWebSockets() > 0 }},
		{"client session ends", func(_ *a2atest.Server, c *client.Client) bool { return client.DropSession(c) }},
	}
	ops := []string{"SendStreamingMessage", "SubscribeToTask"}
	for _, op := range ops {
		for _, d := range drops {
			for _, live := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/between reads", op, d.name)
				if live {
					name = fmt.Sprintf("%s/%s/while reading", op, d.name)
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					var dials dialCounter
					srv := a2atest.Start(t, &a2atest.Options{WrapHTTP: dials.wrap})
					c := connect(t, srv, client.BindingCapnweb, nil)
					watcher := connect(t, srv, client.BindingJSONRPC, nil)
					ctx := t.Context()
					key := uuid.NewString()

					var stream iter.Seq2[a2a.Event, error]
					if op == "SendStreamingMessage" {
						stream = c.SendStreamingMessage(ctx, userMessage(fmt.Sprintf("steps %s %d", key, steps)))
					} else {
						req := userMessage(fmt.Sprintf("steps %s %d", key, steps))
						req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
						res, err := c.SendMessage(ctx, req)
						if err != nil {
							t.Fatalf("SendMessage() = %v", err)
						}
						waitState(t, watcher, res.(*a2a.Task).ID, a2a.TaskStateWorking)
						stream = c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: res.(*a2a.Task).ID})
					}
					next, stop := iter.Pull2(stream)
					defer stop()
					var events []a2a.Event
					read := func(n int) {
						t.Helper()
						for range n {
							ev, err, ok := next()
							if !ok || err != nil {
								t.Fatalf("stream ended after %v: %v", kinds(events), err)
							}
							events = append(events, ev)
						}
					}
					// dropAndStep drops the connection and lets the agent emit n events while
					// the client is away (live: while the client waits in a read).
					dropAndStep := func(n int) {
						t.Helper()
						do := func() {
							if !d.drop(srv, c) {
								t.Errorf("nothing to drop")
							}
							for range n {
								srv.Agent.Step(key)
							}
						}
						if live {
							time.AfterFunc(20*time.Millisecond, do)
							read(n)
							return
						}
						do()
						waitArtifacts(t, watcher, events[0].TaskInfo().TaskID, len(artifactsOf(events))+n)
						read(n)
					}

					read(1) // the task (a subscription's first event reports it working already)
					if op == "SendStreamingMessage" {
						read(1) // working
					}
					srv.Agent.Step(key)
					read(1)
					dropAndStep(2)
					dropAndStep(steps - 3)
					rest, err := collect(func(yield func(a2a.Event, error) bool) {
						for {
							ev, err, ok := next()
							if !ok || !yield(ev, err) {
								return
							}
						}
					})
					if err != nil {
						t.Fatalf("end of stream: %v", err)
					}
					events = append(events, rest...)

					var want []string
					for i := 1; i <= steps; i++ {
						want = append(want, fmt.Sprintf("artifact(step %d)", i))
					}
					want = append(want, "status(TASK_STATE_COMPLETED)")
					got := kinds(events)
					if op == "SendStreamingMessage" {
						want = append([]string{"task(TASK_STATE_SUBMITTED)", "status(TASK_STATE_WORKING)"}, want...)
					} else {
						got = got[1:] // the opening task, in whatever state it is
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("events (-want +got):\n%s", diff)
					}
					s := seqs(events)
					for i := 1; i < len(s); i++ {
						if s[i] != s[i-1]+1 {
							t.Errorf("sequence numbers %v: want consecutive (none lost or repeated)", s)
							break
						}
					}
					if n := dials.n.Load(); n != 3 {
						t.Errorf("the transport dialed %d times, want 3 (once, then once per drop)", n)
					}
				})
			}
		}
	}
}

func artifactsOf(events []a2a.Event) []a2a.Event {
	var out []a2a.Event
	for _, ev := range events {
		if _, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			out = append(out, ev)
		}
	}
	return out
}

// waitArtifacts waits until the task has n artifacts.
func waitArtifacts(t *testing.T, c *client.Client, id a2a.TaskID, n int) {
	t.Helper()
	a2atest.WaitTask(t, c, id, func(task *a2a.Task) bool { return len(task.Artifacts) >= n })
}

// A unary call in flight when the connection drops fails, and is not sent again: SendMessage
// is not idempotent. The next call redials.
func TestUnaryCallDrop(t *testing.T) {
	t.Parallel()
	srv := a2atest.Start(t, nil)
	c := connect(t, srv, client.BindingCapnweb, nil)
	watcher := connect(t, srv, client.BindingJSONRPC, nil)
	ctx := t.Context()
	key := uuid.NewString()
	req := userMessage("wait " + key)
	req.Message.ContextID = uuid.NewString()

	errc := make(chan error, 1)
	go func() {
		_, err := c.SendMessage(ctx, req)
		errc <- err
	}()
	var id a2a.TaskID
	for id == "" {
		list, err := watcher.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: req.Message.ContextID})
		if err != nil {
			t.Fatalf("ListTasks() = %v", err)
		}
		if len(list.Tasks) > 0 {
			id = list.Tasks[0].ID
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.DropWebSockets()
	if err := <-errc; !errors.Is(err, client.ErrConnectionLost) {
		t.Errorf("SendMessage() across a drop = %v, want ErrConnectionLost", err)
	}
	srv.Agent.Release(key)
	task := waitState(t, c, id, a2a.TaskStateCompleted) // the next call redials
	list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: req.Message.ContextID})
	if err != nil {
		t.Fatalf("ListTasks() = %v", err)
	}
	if len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Errorf("ListTasks() = %d tasks, want the one task: the message must not be sent twice", len(list.Tasks))
	}
}

// Reconnection is bounded: when the server is gone, a stream fails with ErrConnectionLost once
// CapnwebOptions.Reconnect has passed, or at once when its context ends.
func TestReconnectGivesUp(t *testing.T) {
	t.Parallel()
	for _, cancel := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancel=%v", cancel), func(t *testing.T) {
			t.Parallel()
			srv := a2atest.Start(t, nil)
			c := connect(t, srv, client.BindingCapnweb, &client.Options{Capnweb: &client.CapnwebOptions{Reconnect: 300 * time.Millisecond}})
			ctx, stopCtx := context.WithCancel(t.Context())
			defer stopCtx()
			key := uuid.NewString()
			start := time.Now()
			var err error
			for ev, e := range c.SendStreamingMessage(ctx, userMessage("wait "+key)) {
				if e != nil {
					err = e
					break
				}
				if _, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
					start = time.Now()
					if err := srv.Close(); err != nil {
						t.Errorf("Server.Close() = %v", err)
					}
					if cancel {
						time.AfterFunc(50*time.Millisecond, stopCtx)
					}
				}
			}
			elapsed := time.Since(start)
			switch {
			case cancel && !errors.Is(err, context.Canceled):
				t.Errorf("stream error = %v, want context.Canceled", err)
			case !cancel && !errors.Is(err, client.ErrConnectionLost):
				t.Errorf("stream error = %v, want ErrConnectionLost", err)
			case elapsed > 5*time.Second:
				t.Errorf("stream failed after %v, want about the reconnect bound", elapsed)
			}
		})
	}
}
