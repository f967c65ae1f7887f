package capnweb

import (
	"context"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// stuckTransport never finishes a Send until it is closed: a peer that stopped reading.
type stuckTransport struct {
	closed chan struct{}
	once   sync.Once
}

func (t *stuckTransport) Send(context.Context, []byte) error {
	<-t.closed
	return io.ErrClosedPipe
}

func (t *stuckTransport) Receive(ctx context.Context) ([]byte, error) {
	select {
	case <-t.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *stuckTransport) Close(error) error {
	t.once.Do(func() { close(t.closed) })
	return nil
}

// TestCloseGrace checks that a peer that stopped reading holds Close up for closeGrace at
// most: then the transport is closed under the blocked write.
func TestCloseGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &stuckTransport{closed: make(chan struct{})}
		s := NewSession(tr, nil, nil)
		p := s.Main().Call("hello")
		defer p.Release()
		synctest.Wait() // the write loop is stuck in Send
		start := time.Now()
		s.Close()
		if d := time.Since(start); d != closeGrace {
			t.Errorf("Close took %v with a stuck peer, want closeGrace (%v)", d, closeGrace)
		}
	})
}
