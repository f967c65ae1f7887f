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
	want := `["resolve",2,3]`
	for {
		select {
		case m := <-tr.got:
			if m != want {
				continue
			}
			tr.mu.Lock()
			way := tr.sent[m]
			tr.mu.Unlock()
			if way != "pass" {
				t.Errorf("%s was sent by the write loop, want by the executor that ran add", m)
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s", want)
		}
	}
}
