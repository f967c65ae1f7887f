package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// A task that finishes within -drain completes when serve is told to stop; one that would not
// is failed, with the reason, at the end of the drain time.
func TestDrainLetsTasksFinish(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	db := filepath.Join(dir, "a2a.db")
	cfg := serveConfig{addr: addr, db: db, agent: "builtin", noPush: true, drain: 20 * time.Second}
	stop, done := starter(t, cfg)()
	c := sdkClient(t, addr)
	start := func(text string) a2a.TaskID {
		res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
			Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		if err != nil {
			t.Fatal(err)
		}
		return res.(*a2a.Task).ID
	}
	short := start("wait 2")
	// The stop comes in the middle of the task: it has seconds left.
	time.Sleep(500 * time.Millisecond)
	stop()
	if err := stopped(t, done); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	st, err := sqlite.Open(t.Context(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Get(t.Context(), store.Owner{}, short)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("a task with 1.5 s left, stopped with -drain 20s: %s, want completed", rec.Task.Status.State)
	}

	// Now a drain too short for the task.
	cfg.drain = 300 * time.Millisecond
	stop, done = starter(t, cfg)()
	c = sdkClient(t, addr)
	long := start("wait 30")
	stop()
	if err := stopped(t, done); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if rec, err = st.Get(ctx, store.Owner{}, long); err != nil {
		t.Fatal(err)
	}
	if rec.Task.Status.State != a2a.TaskStateFailed || !strings.Contains(text(rec.Task.Status.Message), "shut down") {
		t.Errorf("a task longer than the drain: %s %q, want failed because the server shut down", rec.Task.Status.State, text(rec.Task.Status.Message))
	}
}

// stopped returns what serve's run returned, failing the test if it has not returned a minute
// after it was told to stop (the drain times here are far shorter).
func stopped(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute of being told to")
		return nil
	}
}

// While serve drains, every binding refuses new requests clearly — 503 with Retry-After on
// each HTTP endpoint of the card (JSON-RPC, HTTP+JSON, capnweb's upgrade), UNAVAILABLE on
// gRPC — and /readyz answers 503 "draining", /healthz still 200, while the stream of the task
// it runs goes on until the task ends (here: failed at the end of the drain time).
func TestDrainRefusesNewRequests(t *testing.T) {
	addr, grpcAddr := freeAddr(t), freeAddr(t)
	const drain = 15 * time.Second // the checks below must happen within it, on a loaded machine
	cfg := serveConfig{addr: addr, grpcAddr: grpcAddr, db: filepath.Join(t.TempDir(), "a2a.db"), agent: "builtin", noPush: true, drain: drain}
	stop, done := starter(t, cfg)()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), "http://"+addr)
	if err != nil {
		t.Fatal(err)
	}
	grpcClient, err := a2aclient.NewFromCard(t.Context(), card,
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolGRPC}}),
		a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	defer grpcClient.Destroy()

	// A task streams its progress, until long after the drain time.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var (
		started  = make(chan struct{})
		stopping atomic.Bool
		after    atomic.Int64 // events the stream received once the drain began
		last     = make(chan a2a.Event, 1)
	)
	go func() {
		var final a2a.Event
		for ev, err := range sdkClient(t, addr).SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("wait 60"))}) {
			if err != nil {
				break
			}
			if final == nil {
				close(started)
			}
			if stopping.Load() {
				after.Add(1)
			}
			final = ev
		}
		last <- final
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the task's stream did not start")
	}
	stopping.Store(true)
	stop()
	waitReadyz(t, addr, http.StatusServiceUnavailable, "draining")

	for _, iface := range card.SupportedInterfaces {
		if iface.ProtocolBinding == a2a.TransportProtocolGRPC {
			continue
		}
		url := strings.Replace(strings.Replace(iface.URL, "wss://", "https://", 1), "ws://", "http://", 1)
		resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`))
		if err != nil {
			t.Errorf("%s at %s while draining: %v, want a 503", iface.ProtocolBinding, url, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "draining") {
			t.Errorf("%s at %s while draining: %d (Retry-After %q) %q, want 503 with Retry-After, saying it drains",
				iface.ProtocolBinding, url, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	// GetTask, which the engine itself would answer while draining (here: not found).
	if _, err = grpcClient.GetTask(ctx, &a2a.GetTaskRequest{ID: "x"}); err == nil || !strings.Contains(err.Error(), "draining") {
		t.Errorf("gRPC GetTask while draining: %v, want UNAVAILABLE, draining", err)
	}
	if code, body := probe(addr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while draining = %d %q, want 200", code, body)
	}
	if code, body := readyState(addr); code != http.StatusServiceUnavailable || body != "draining" {
		t.Fatalf("/readyz after the checks = %d %q: the checks outlasted the drain time (%v), so they did not test it", code, body, drain)
	}

	final := <-last
	if err := stopped(t, done); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	if after.Load() < 2 {
		t.Errorf("the stream received %d events once the drain began, want its progress and its end", after.Load())
	}
	su, ok := final.(*a2a.TaskStatusUpdateEvent)
	if !ok || su.Status.State != a2a.TaskStateFailed || !strings.Contains(text(su.Status.Message), "shut down") {
		t.Errorf("the stream's last event = %#v, want the task failed because the server shut down", final)
	}
}
