package capnweb

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// wayTransport is a transport that notes how each message left: by the write loop (Send,
// SendBatch) or by the goroutine that queued it, at the end of its pass (TrySendBatch).
type wayTransport struct {
	in     chan []byte
	closed chan struct{}
	once   sync.Once

	mu   sync.Mutex
	sent map[string]string // message → "loop" or "pass"
	got  chan string       // each message sent
}

func newWayTransport() *wayTransport {
	return &wayTransport{in: make(chan []byte, 16), closed: make(chan struct{}),
		sent: map[string]string{}, got: make(chan string, 16)}
}

func (t *wayTransport) note(m []byte, way string) {
	t.mu.Lock()
	t.sent[string(m)] = way
	t.mu.Unlock()
	t.got <- string(m)
}

func (t *wayTransport) Send(_ context.Context, m []byte) error { t.note(m, "loop"); return nil }

func (t *wayTransport) SendBatch(_ context.Context, msgs [][]byte) error {
	for _, m := range msgs {
		t.note(m, "loop")
	}
	return nil
}

func (t *wayTransport) TrySendBatch(msgs [][]byte) (bool, error) {
	for _, m := range msgs {
		t.note(m, "pass")
	}
	return true, nil
}

func (t *wayTransport) Receive(ctx context.Context) ([]byte, error) {
	select {
	case m := <-t.in:
		return m, nil
	case <-t.closed:
		return nil, errors.New("closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *wayTransport) Buffered() bool { return len(t.in) > 0 }

func (t *wayTransport) Close(error) error { t.once.Do(func() { close(t.closed) }); return nil }

type laterAPI struct {
	Target
	deferred chan *Deferred
}

func (a *laterAPI) Later(ctx context.Context) *Deferred {
	d := NewDeferred(ctx)
	a.deferred <- d
	return d
}

func (*laterAPI) Add(a, b float64) float64 { return a + b }

// A call made ready by a result that settled on another goroutine (a Deferred resolved by a
// job, say) runs on an executor goroutine, which sends its answer itself when it is done, as
// the read loop does at the end of a pass: not by way of the write loop, which would be one more
// thread to wake before the answer leaves.
func TestExecutorSendsItsAnswers(t *testing.T) {
	api := &laterAPI{deferred: make(chan *Deferred, 1)}
	tr := newWayTransport()
	s := NewSession(tr, api, nil)
	defer s.Close()
	tr.in <- []byte(`["push",["pipeline",0,["later"],[]]]`)
	tr.in <- []byte(`["push",["pipeline",0,["add"],[["pipeline",1],2]]]`)
	tr.in <- []byte(`["pull",2]`)
	var d *Deferred
	select {
	case d = <-api.deferred:
	case <-time.After(10 * time.Second):
		t.Fatal("later was not called")
	}
	time.Sleep(10 * time.Millisecond) // the read loop has read the rest and gone idle
	d.Resolve(1.0, nil)
	if way := tr.wayOf(t, `["resolve",2,3]`); way != "pass" {
		t.Errorf("the answer was sent by the write loop, want by the executor that ran add")
	}
}

// wayOf waits for msg to be sent and returns how it left ("loop" or "pass").
func (tr *wayTransport) wayOf(t *testing.T, msg string) string {
	t.Helper()
	for {
		select {
		case m := <-tr.got:
			if m != msg {
				continue
			}
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return tr.sent[m]
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s", msg)
		}
	}
}

// A pass that settles a result someone awaits leaves its messages (the result's release) to the
// write loop: the goroutine it woke typically calls again at once, and the loop, which yields
// once before it writes, then sends both in one write. The pass would have written alone.
func TestPassLeavesToLoopWhenItWakesAwaiter(t *testing.T) {
	tr := newWayTransport()
	s := NewSession(tr, nil, nil)
	defer s.Close()
	p := s.Main().Call("add", 1, 2)
	defer p.Release()
	got := make(chan any, 1)
	go func() {
		v, err := p.Await(t.Context())
		if err != nil {
			v = err
		}
		got <- v
	}()
	for range 2 { // the push and the pull
		select {
		case <-tr.got:
		case <-time.After(10 * time.Second):
			t.Fatal("the call was not sent")
		}
	}
	tr.in <- []byte(`["resolve",1,3]`)
	if v := <-got; v != 3.0 {
		t.Fatalf("Await = %v, want 3", v)
	}
	if way := tr.wayOf(t, `["release",1,1]`); way != "loop" {
		t.Errorf("the release was sent by the pass that read the result, want by the write loop")
	}
}
