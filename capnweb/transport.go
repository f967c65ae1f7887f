package capnweb

import (
	"context"
	"errors"
	"io"
	"sync"
)

// Pipe returns the two ends of an in-memory transport, for connecting two sessions in one
// process (tests, or a local object behind the capnweb API).
func Pipe() (Transport, Transport) {
	a := &pipeEnd{in: newMsgQueue()}
	b := &pipeEnd{in: newMsgQueue()}
	a.peer, b.peer = b, a
	return a, b
}

type pipeEnd struct {
	in   *msgQueue
	peer *pipeEnd
}

func (p *pipeEnd) Send(ctx context.Context, msg []byte) error {
	return p.peer.in.put(msg)
}

func (p *pipeEnd) Receive(ctx context.Context) ([]byte, error) {
	return p.in.get(ctx)
}

func (p *pipeEnd) Close(reason error) error {
	if reason == nil {
		reason = io.EOF
	}
	p.in.close(reason)
	p.peer.in.close(reason)
	return nil
}

// msgQueue is an unbounded FIFO of messages with a close error.
type msgQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	msgs   [][]byte
	closed error
}

func newMsgQueue() *msgQueue {
	q := &msgQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

var errQueueClosed = errors.New("capnweb: transport closed")

func (q *msgQueue) put(m []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed != nil {
		return errQueueClosed
	}
	q.msgs = append(q.msgs, m)
	q.cond.Signal()
	return nil
}

func (q *msgQueue) get(ctx context.Context) ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.msgs) == 0 && q.closed == nil && ctx.Err() == nil {
		// About to wait: have ctx's end wake the wait (only then, as it costs an allocation).
		q.mu.Unlock()
		stop := context.AfterFunc(ctx, func() {
			q.mu.Lock()
			q.cond.Broadcast()
			q.mu.Unlock()
		})
		defer stop()
		q.mu.Lock()
	}
	for len(q.msgs) == 0 && q.closed == nil && ctx.Err() == nil {
		q.cond.Wait()
	}
	if len(q.msgs) > 0 {
		m := q.msgs[0]
		q.msgs[0] = nil
		q.msgs = q.msgs[1:]
		return m, nil
	}
	if q.closed != nil {
		return nil, q.closed
	}
	return nil, context.Cause(ctx)
}

func (q *msgQueue) close(err error) {
	q.mu.Lock()
	if q.closed == nil {
		q.closed = err
	}
	q.cond.Broadcast()
	q.mu.Unlock()
}
