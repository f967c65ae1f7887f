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
type Feed struct {
	In      chan []byte
	Answers chan []byte
	closed  chan struct{}
	once    sync.Once
}

// NewFeed returns a Feed with room for a few messages each way.
func NewFeed() *Feed {
	return &Feed{In: make(chan []byte, 4), Answers: make(chan []byte, 1), closed: make(chan struct{})}
}

// Send implements capnweb.Transport.
func (t *Feed) Send(_ context.Context, m []byte) error {
	if bytes.HasPrefix(m, []byte(`["resolve",`)) || bytes.HasPrefix(m, []byte(`["reject",`)) {
		t.Answers <- m
	}
	return nil
}

// Receive implements capnweb.Transport.
func (t *Feed) Receive(ctx context.Context) ([]byte, error) {
	select {
	case m := <-t.In:
		return m, nil
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
