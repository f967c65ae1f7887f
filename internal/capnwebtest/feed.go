package capnwebtest

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// Feed is the server's side of a connection whose peer is a benchmark speaking the protocol
// as bytes: a session on it receives the messages put on In, and each resolve or reject it
// sends arrives on Answers (other messages are dropped).
//
// Messages put on Bursts arrive together, as the frames of one read from a socket do: the
// session sees them all buffered and handles them in one pass.
type Feed struct {
	In      chan []byte
	Bursts  chan [][]byte
	Answers chan []byte
	closed  chan struct{}
	once    sync.Once
	burst   [][]byte // the rest of the burst being received (the session's reader only)
}

// NewFeed returns a Feed with room for a few messages each way.
func NewFeed() *Feed {
	return &Feed{In: make(chan []byte, 4), Bursts: make(chan [][]byte, 1), Answers: make(chan []byte, 1),
		closed: make(chan struct{})}
}

// Buffered reports whether the session can receive another message without waiting: the rest
// of a burst, or a message on In.
func (t *Feed) Buffered() bool { return len(t.burst) > 0 || len(t.In) > 0 }

// Send implements capnweb.Transport.
func (t *Feed) Send(_ context.Context, m []byte) error {
	if bytes.HasPrefix(m, []byte(`["resolve",`)) || bytes.HasPrefix(m, []byte(`["reject",`)) {
		t.Answers <- m
	}
	return nil
}

// TrySendBatch sends msgs at once, as the WebSocket transport does when the socket takes them:
// the session then sends its answers itself, at the end of what it was handling, with no write
// loop to wake.
func (t *Feed) TrySendBatch(msgs [][]byte) (bool, error) {
	for _, m := range msgs {
		t.Send(context.Background(), m)
	}
	return true, nil
}

// Receive implements capnweb.Transport.
func (t *Feed) Receive(ctx context.Context) ([]byte, error) {
	if len(t.burst) > 0 {
		m := t.burst[0]
		t.burst = t.burst[1:]
		return m, nil
	}
	select {
	case m := <-t.In:
		return m, nil
	case b := <-t.Bursts:
		if len(b) == 0 {
			return nil, errors.New("capnwebtest: empty burst")
		}
		t.burst = b[1:]
		return b[0], nil
	case <-t.closed:
		return nil, errors.New("closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close implements capnweb.Transport.
func (t *Feed) Close(error) error { t.once.Do(func() { close(t.closed) }); return nil }

// Call makes one call the way a client does — push, then pull id — on s, the session on the
// feed, waits for its answer, releases it, and returns the answer.
func (t *Feed) Call(s *capnweb.Session, push []byte, id int) ([]byte, error) {
	ids := strconv.Itoa(id)
	t.In <- push
	t.In <- []byte(`["pull",` + ids + `]`)
	var m []byte
	select {
	case m = <-t.Answers:
	case <-s.Done():
		return nil, s.Err()
	}
	t.In <- []byte(`["release",` + ids + `,1]`)
	return m, nil
}
