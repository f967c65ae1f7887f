package capnweb

// Sending a batch client's batch: whatever the server may wait for must be in the request,
// since nothing the client sends after it can arrive.
//
// The JS client sends what it queued by the end of the current task and drops the rest. A call
// that waits on something dropped — a promise's resolution, the content of a stream — waits
// forever, and the batch's response with it. So when a Go batch client sends its batch, it
// first puts in:
//
//   - the resolution of every promise it sent (an argument that was a local call's result, a
//     Deferred's): its value if it has settled, else a rejection with ErrBatchPending, so the
//     server's call fails instead of waiting;
//   - the content of every ReadableStream (a Blob's included) it sent, read to its end then
//     and there, by the goroutine sending the batch, with that goroutine's context; the stream
//     is aborted if the context ends first.
//
// A WritableStream cannot be sent at all (the server's writes could never be acknowledged), and
// the batch does not wait for a callback the server calls: its answer goes nowhere, and a
// server that awaits it (the JS server does) never answers the batch.
//
// Concurrency: batchFlush and exportEntry.answered are guarded by s.mu.
// A resolution claims its export (claimAnswer) before it is queued, and says when it is
// (answerQueued); sealBatch claims the rest, then waits for the claimed ones to be queued, so
// every promise gets exactly one resolution, in the batch.

import (
	"context"
	"io"
)

// errBatchWritable refuses a WritableStream in a batch.
var errBatchWritable = typeErrorf("An HTTP batch cannot carry a WritableStream: the server's writes could not be acknowledged. Use a WebSocket session.")

// batchFlush is what a batch client keeps for sending its batch, in its transport (an idle
// WebSocket session must stay small). Guarded by the session's mu.
type batchFlush struct {
	sealed    bool        // the batch is being sent: no resolution may join it now
	answering int         // resolutions being queued into the batch
	pumps     []batchPump // readable streams to write into the batch when it is sent
}

// batchFlush returns the batch client's flush state.
func (s *Session) batchFlush() *batchFlush { return &s.t.(*batchClientTransport).flush }

// batchPump is a ReadableStream sent in a batch, to be written into it when it is sent.
type batchPump struct {
	rs *ReadableStream
	w  hook // the writer end of the pipe, on the server
}

// claimAnswer reports whether the resolution of export id may be queued now: the batch is not
// being sent, and nothing else resolved it. The caller then queues it and calls answerQueued.
func (s *Session) claimAnswer(id int64) bool {
	f := s.batchFlush()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.exports[id]
	if f.sealed || e == nil || e.answered {
		return false
	}
	e.answered = true
	f.answering++
	return true
}

// answerQueued ends what claimAnswer began.
func (s *Session) answerQueued() {
	f := s.batchFlush()
	s.mu.Lock()
	f.answering--
	s.cond.Broadcast()
	s.mu.Unlock()
}

// sealBatch puts into the batch, about to be sent, what the server may wait for (see the top
// of this file). It reports false when another goroutine sealed it already.
func (s *Session) sealBatch(ctx context.Context) bool {
	type late struct {
		id int64
		h  hook
	}
	f := s.batchFlush()
	s.mu.Lock()
	if f.sealed {
		s.mu.Unlock()
		return false
	}
	f.sealed = true
	var pending []late
	for id, e := range s.exports {
		if e.pulling && !e.answered {
			e.answered = true
			pending = append(pending, late{id, e.h})
		}
	}
	pumps := f.pumps
	f.pumps = nil
	for f.answering > 0 {
		s.cond.Wait() // a resolution claimed before the seal is being queued
	}
	// The hooks are dup'ed without mu, as ensureResolving does: shutdown waits for dupping.
	s.dupping++
	s.mu.Unlock()
	for i := range pending {
		pending[i].h = pending[i].h.dup()
	}
	s.mu.Lock()
	if s.dupping--; s.dupping == 0 {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
	for _, p := range pending {
		v, err, ok := s.tryAnswerPull(p.h)
		if !ok {
			v, err = nil, ErrBatchPending
		}
		s.sendResolution(p.id, v, err)
		releaseValue(v)
		p.h.release()
	}
	for _, p := range pumps {
		writeIntoBatch(ctx, p)
	}
	return true
}

// writeIntoBatch writes a stream's chunks, then its end, into the batch: no flow control, the
// batch is one request.
func writeIntoBatch(ctx context.Context, p batchPump) {
	defer p.w.release()
	send := func(method string, args []any) {
		h, _ := streamCall(p.w, method, args)
		h.release()
	}
	for {
		v, err := p.rs.Read(ctx)
		switch {
		case err == io.EOF:
			send("close", nil)
			return
		case err != nil:
			send("abort", []any{err})
			return
		}
		send("write", []any{v})
	}
}

// batchInput is the batch server's transport: allReceived is closed once every message of the
// request has been read (and so handled: the read loop reads one after the other).
type batchInput interface {
	allReceived() <-chan struct{}
}

// pullInBatch is pull for a batch server's pending import: the value of a promise the client
// sent arrives, if at all, later in the same request, and an answer to a call the server made
// (a callback's) never does. So it waits until the import settles or the request has been
// read, and then fails with ErrBatchCallback if it has not settled.
func (h *importHook) pullInBatch(ctx context.Context) (any, error) {
	s, e := h.s, h.e
	in, _ := s.t.(batchInput)
	s.mu.Lock()
	if e.res == nil && e.done == nil {
		e.done = make(chan struct{})
	}
	done := e.done
	s.mu.Unlock()
	var all <-chan struct{}
	if in != nil {
		all = in.allReceived()
	}
	yieldGate(ctx) // the read loop must go on: what this waits for is still to be read
	select {
	case <-done:
	case <-all:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	s.mu.Lock()
	r := e.res
	s.mu.Unlock()
	if r == nil {
		return nil, ErrBatchCallback
	}
	return r.pull(ctx)
}
