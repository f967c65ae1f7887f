package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/clustertest"
)

var quiet = slog.New(slog.DiscardHandler)

// connect connects a Fanout to url on stream, closed (and the stream deleted) when the test ends.
func connect(t *testing.T, url, stream string) *Fanout {
	t.Helper()
	f, err := Connect(t.Context(), url, &Options{Stream: stream, Logger: quiet, ReconnectWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.js.DeleteStream(ctx, stream)
		f.Close()
	})
	return f
}

// received collects what a Fanout delivers, decoded.
type received struct {
	mu     sync.Mutex
	writes []*engine.Written
	errs   []error
	more   chan struct{}
}

func listen(t *testing.T, f *Fanout) *received {
	t.Helper()
	r := &received{more: make(chan struct{}, 1)}
	stop, err := f.Listen(func(in *engine.Incoming) {
		w, err := in.Decode()
		r.mu.Lock()
		if err != nil {
			r.errs = append(r.errs, err)
		} else if w.Replica != in.Replica || w.Task != in.Task {
			r.errs = append(r.errs, fmt.Errorf("decoded %s/%s from a message of %s/%s", w.Replica, w.Task, in.Replica, in.Task))
		} else {
			r.writes = append(r.writes, w)
		}
		r.mu.Unlock()
		select {
		case r.more <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return r
}

// wait returns the writes received once there are n, or fails.
func (r *received) wait(t *testing.T, n int) []*engine.Written {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		got, errs := append([]*engine.Written(nil), r.writes...), r.errs
		r.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("delivery errors: %v", errs)
		}
		if len(got) >= n {
			return got
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("%d writes received, want %d", len(got), n)
		}
	}
}

func status(task a2a.TaskID, i int) a2a.Event {
	return &a2a.TaskStatusUpdateEvent{TaskID: task, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking,
		Message: &a2a.Message{ID: fmt.Sprint("m", i), Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{a2a.NewTextPart(fmt.Sprint("step ", i))}}}}
}

// Every replica receives every write, its own too, in the order published, each task's events
// decoded as they were written; task IDs that no subject could hold travel unharmed.
func TestFanoutDeliversEveryWriteInOrder(t *testing.T) {
	t.Parallel()
	url := clustertest.NATS(t)
	stream := clustertest.Name("A2ATEST")
	a, b := connect(t, url, stream), connect(t, url, stream)
	onA, onB := listen(t, a), listen(t, b)
	tasks := []a2a.TaskID{"plain", "with.dots and spaces*>", "ünïcödé/\\\"quotes\""}
	const writes = 50
	var want []*engine.Written
	for i := range writes {
		task := tasks[i%len(tasks)]
		w := &engine.Written{Replica: "a", Task: task, Version: int64(i + 1), Seq: int64(2*i + 1), Last: int64(2*i + 2),
			Events: []a2a.Event{status(task, 2*i+1), status(task, 2*i+2)}}
		want = append(want, w)
		a.Publish(w)
	}
	for name, r := range map[string]*received{"a": onA, "b": onB} {
		got := r.wait(t, writes)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("writes received by %s (-want +got):\n%s", name, diff)
		}
	}
	if err := b.Ready(t.Context()); err != nil {
		t.Errorf("Ready() = %v", err)
	}
}

// A write whose events the server could not carry travels without them: the receiver knows
// which sequence numbers to read from the store.
func TestFanoutLargeWriteTravelsWithoutItsEvents(t *testing.T) {
	t.Parallel()
	url := clustertest.NATS(t)
	stream := clustertest.Name("A2ATEST")
	a := connect(t, url, stream)
	r := listen(t, a)
	big := &a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: &a2a.Artifact{ID: "x",
		Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("x", int(a.nc.MaxPayload())))}}}
	a.Publish(&engine.Written{Replica: "a", Task: "t", Version: 3, Seq: 5, Last: 5, Events: []a2a.Event{big}})
	got := r.wait(t, 1)[0]
	if got.Seq != 5 || got.Last != 5 || got.Version != 3 || len(got.Events) != 0 {
		t.Errorf("received %+v, want events 5 to 5 of version 3, without the events", got)
	}
}

func TestConnectRefuses(t *testing.T) {
	t.Parallel()
	if _, err := Connect(t.Context(), "nats://127.0.0.1:4222", &Options{Stream: "no.dots"}); err == nil {
		t.Error("a stream name with a dot was accepted")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := Connect(ctx, "nats://127.0.0.1:1", &Options{ConnectTimeout: time.Second}); err == nil {
		t.Error("Connect to a port nobody listens on succeeded")
	}
}

// cutter is a TCP proxy to a NATS server that the test can cut: while cut, it closes the
// connections it had and every new one at once, as a network partition between one replica
// and NATS would, while the server stays up for the others.
type cutter struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	c.wg.Go(c.serve)
	t.Cleanup(func() {
		ln.Close()
		c.setCut(true)
		c.wg.Wait()
	})
	return c
}

func (c *cutter) url() string { return "nats://" + c.ln.Addr().String() }

func (c *cutter) serve() {
	for {
		down, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.wg.Go(func() {
			defer down.Close()
			up, err := net.Dial("tcp", c.target)
			if err != nil {
				return
			}
			defer up.Close()
			c.mu.Lock()
			if c.cut {
				c.mu.Unlock()
				return
			}
			c.conns[down], c.conns[up] = struct{}{}, struct{}{}
			c.mu.Unlock()
			go func() { io.Copy(up, down); up.Close() }()
			io.Copy(down, up)
		})
	}
}

// setCut cuts the link (closing every connection) or restores it.
func (c *cutter) setCut(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = cut
	if cut {
		for conn := range c.conns {
			conn.Close()
		}
		clear(c.conns)
	}
}

// A replica cut off from NATS while NATS stays up, and the others publish: once it is back,
// it receives what was published meanwhile (the stream kept it), in order, before what comes
// after.
func TestFanoutReplicaCatchesUpAfterReconnecting(t *testing.T) {
	t.Parallel()
	srv := clustertest.PrivateNATS(t)
	link := newCutter(t, strings.TrimPrefix(srv.URL(), "nats://"))
	a := connect(t, srv.URL(), "A2ATEST")
	b := connect(t, link.url(), "A2ATEST")
	onB := listen(t, b)
	write := func(i int) *engine.Written {
		return &engine.Written{Replica: "a", Task: "t", Version: int64(i), Seq: int64(i), Last: int64(i), Events: []a2a.Event{status("t", i)}}
	}
	var want []*engine.Written
	publish := func(i int) {
		w := write(i)
		want = append(want, w)
		a.Publish(w)
	}
	publish(1)
	onB.wait(t, 1)
	link.setCut(true)
	deadline := time.Now().Add(time.Minute)
	for b.Ready(t.Context()) == nil {
		if time.Now().After(deadline) {
			t.Fatal("b never noticed it lost NATS")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := 2; i <= 4; i++ {
		publish(i) // stored by the stream while b cannot hear it
	}
	select {
	case <-a.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("a's publishes were not acknowledged")
	}
	link.setCut(false)
	publish(5)
	got := onB.wait(t, 5)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writes received by b across its disconnection (-want +got):\n%s", diff)
	}
}
