package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/push"
)

// pushReceiver is a push URL on loopback that verifies every delivery against the server's
// JWKS and records the events by sequence number.
type pushReceiver struct {
	addr string
	mu   sync.Mutex
	srv  *http.Server
	got  map[int64]*a2a.StreamResponse
	auth []string
	tok  []string
	h    http.Handler
}

func newPushReceiver(t *testing.T, jwksURL string) *pushReceiver {
	r := &pushReceiver{got: map[int64]*a2a.StreamResponse{}}
	r.h = push.NewReceiver(push.NewVerifier(jwksURL, nil), func(_ context.Context, n *push.Notification) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got[n.Seq] = n.Event
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.start(ln)
	t.Cleanup(r.stop)
	return r
}

func (r *pushReceiver) start(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, q.Header.Get("Authorization"))
		r.tok = append(r.tok, q.Header.Get(push.TokenHeader))
		r.mu.Unlock()
		r.h.ServeHTTP(w, q)
	})}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go srv.Serve(ln)
}

func (r *pushReceiver) stop() {
	r.mu.Lock()
	srv := r.srv
	r.mu.Unlock()
	srv.Close()
}

func (r *pushReceiver) restart(t *testing.T) {
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ln, err = net.Listen("tcp", r.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	r.start(ln)
}

// completed reports whether the receiver got an event that completes the task, and whether
// the events it got have contiguous sequence numbers.
func (r *pushReceiver) completed() (done, contiguous bool, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lo, hi := int64(-1), int64(-1)
	for seq, ev := range r.got {
		if lo < 0 || seq < lo {
			lo = seq
		}
		hi = max(hi, seq)
		switch x := ev.Event.(type) {
		case *a2a.TaskStatusUpdateEvent:
			done = done || x.Status.State == a2a.TaskStateCompleted
		case *a2a.Task:
			done = done || x.Status.State == a2a.TaskStateCompleted
		}
	}
	return done, hi-lo+1 == int64(len(r.got)), len(r.got)
}

// serve delivers push notifications, signed, with the config's credentials; a receiver that
// is down and a server restart lose none (the outbox is in the SQLite file); SSRF targets are
// refused when the config is created.
func TestServePush(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"-addr", addr, "-db", filepath.Join(dir, "a2a.db"), "-push-allow", "127.0.0.1/32", "-agent", "builtin"}) // its "ask" waits for input
	if err != nil {
		t.Fatal(err)
	}
	start := starter(t, cfg)
	stop, done := start()
	c := sdkClient(t, addr)
	card, err := http.Get("http://" + addr + push.JWKSPath)
	if err != nil || card.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %v", push.JWKSPath, card, err)
	}
	card.Body.Close()
	r := newPushReceiver(t, "http://"+addr+push.JWKSPath)

	// A task that waits for input; its push config is set meanwhile.
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask"))})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("SendMessage(ask) = %#v, want an input-required task", res)
	}
	for _, bad := range []string{"http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data", "http://[::1]:9/hook", "http://192.168.1.1/hook", "ftp://" + r.addr + "/hook"} {
		_, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, URL: bad})
		if !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("CreateTaskPushConfig(%s) error = %v, want InvalidParams", bad, err)
		}
	}
	if _, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, URL: "http://" + r.addr + "/hook",
		Token: "tok-1", Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "cred-1"}}); err != nil {
		t.Fatalf("CreateTaskPushConfig: %v", err)
	}

	// The receiver goes down; the answer completes the task; the server restarts.
	r.stop()
	res, err = c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleUser,
		TaskID: task.ID, Parts: a2a.ContentParts{a2a.NewTextPart("Ada")}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := res.(*a2a.Task); !ok || got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("answer = %#v, want a completed task", res)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	stop, done = start()
	defer func() { stop(); <-done }()
	r.restart(t)

	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ok, contiguous, n := r.completed(); ok && contiguous && n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			_, contiguous, n := r.completed()
			t.Fatalf("after restarts: %d events received (contiguous %v), none completing the task", n, contiguous)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.auth {
		if r.auth[i] != "Bearer cred-1" || r.tok[i] != "tok-1" {
			t.Errorf("delivery %d: Authorization %q, token %q", i, r.auth[i], r.tok[i])
		}
	}
}
