package capnweb

// Streams: ReadableStream and WritableStream over RPC, pipes, and sender-side flow control.
//
// A ReadableStream sent to the peer travels through a pipe: we send ["pipe"], refer to its
// readable end as ["readable", id], and pump chunks into its writable end with "stream" messages
// (write, then close or abort). Each stream call's resolution is an acknowledgement; the sender
// keeps at most a window of bytes unacknowledged, sized from the measured bandwidth and round
// trip as the JS library does. A receiver acknowledges a chunk when its reader takes it, so a
// slow reader slows the sender.

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"
	"time"
)

// ReadableStream is a stream of values (chunks): one made locally with NewReadableStream and
// sent to the peer, or one received from the peer and read here. A stream is read once.
type ReadableStream struct {
	mu        sync.Mutex
	cond      *sync.Cond
	next      func() (any, error, bool) // local source
	stop      func()
	queue     []streamItem // received chunks waiting for the reader
	eof       bool
	err       error
	taken     bool // already read or sent
	delivered bool // handed to the application, which now owns it
}

type streamItem struct {
	v   any
	ack func(error)
}

// NewReadableStream returns a stream whose chunks come from seq. Iteration stops at the first
// error, which the reader (or the remote reader) receives.
func NewReadableStream(seq iter.Seq2[any, error]) *ReadableStream {
	next, stop := iter.Pull2(seq)
	rs := &ReadableStream{next: next, stop: stop}
	rs.cond = sync.NewCond(&rs.mu)
	return rs
}

// ReadableStreamOf returns a stream of the given chunks.
func ReadableStreamOf(chunks ...any) *ReadableStream {
	return NewReadableStream(func(yield func(any, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
}

func newReceivedStream() *ReadableStream {
	rs := &ReadableStream{}
	rs.cond = sync.NewCond(&rs.mu)
	return rs
}

// Read returns the next chunk, or io.EOF at the end.
func (rs *ReadableStream) Read(ctx context.Context) (any, error) {
	rs.mu.Lock()
	rs.taken = true
	rs.mu.Unlock()
	if rs.next != nil {
		rs.mu.Lock()
		if rs.eof || rs.err != nil {
			err := rs.err
			rs.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return nil, err
		}
		rs.mu.Unlock()
		v, err, ok := rs.next()
		if !ok || err != nil {
			rs.mu.Lock()
			rs.eof, rs.err = true, err
			rs.mu.Unlock()
			rs.stop()
			if err == nil {
				err = io.EOF
			}
			return nil, err
		}
		return v, nil
	}
	yieldGate(ctx)
	stopWatch := context.AfterFunc(ctx, func() {
		rs.mu.Lock()
		rs.cond.Broadcast()
		rs.mu.Unlock()
	})
	defer stopWatch()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for len(rs.queue) == 0 && !rs.eof && rs.err == nil && ctx.Err() == nil {
		rs.cond.Wait()
	}
	if len(rs.queue) > 0 {
		it := rs.queue[0]
		rs.queue = rs.queue[1:]
		if it.ack != nil {
			it.ack(nil)
		}
		return it.v, nil
	}
	if rs.err != nil {
		return nil, rs.err
	}
	if rs.eof {
		return nil, io.EOF
	}
	return nil, context.Cause(ctx)
}

// All returns the chunks as an iterator; it ends at the end of the stream or at the first error.
func (rs *ReadableStream) All(ctx context.Context) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for {
			v, err := rs.Read(ctx)
			if err == io.EOF {
				return
			}
			if !yield(v, err) || err != nil {
				if err == nil {
					rs.Cancel(errors.New("capnweb: reader stopped"))
				}
				return
			}
		}
	}
}

// Cancel discards the rest of the stream; a remote writer sees its writes fail.
func (rs *ReadableStream) Cancel(reason error) {
	if rs.stop != nil {
		rs.stop()
	}
	rs.fail(reason)
}

// fail ends the stream with err (if it has not ended) and fails writes waiting for the reader.
func (rs *ReadableStream) fail(err error) {
	if err == nil {
		err = errors.New("capnweb: stream canceled")
	}
	rs.mu.Lock()
	if rs.err == nil && !rs.eof {
		rs.err = err
	}
	q := rs.queue
	rs.queue = nil
	rs.cond.Broadcast()
	rs.mu.Unlock()
	for _, it := range q {
		if it.ack != nil {
			it.ack(err)
		}
	}
}

// push adds a received chunk; ack runs when the reader takes it.
func (rs *ReadableStream) push(v any, ack func(error)) {
	rs.mu.Lock()
	if rs.err != nil || rs.eof {
		err := rs.err
		rs.mu.Unlock()
		releaseValue(v)
		if err == nil {
			err = errors.New("capnweb: write after close")
		}
		ack(err)
		return
	}
	rs.queue = append(rs.queue, streamItem{v: v, ack: ack})
	rs.cond.Broadcast()
	rs.mu.Unlock()
}

func (rs *ReadableStream) closeWrite() {
	rs.mu.Lock()
	if rs.err == nil {
		rs.eof = true
	}
	rs.cond.Broadcast()
	rs.mu.Unlock()
}

// releaseUnread cancels a received stream nobody started reading (its payload was released).
func (rs *ReadableStream) releaseUnread() {
	rs.mu.Lock()
	keep := rs.taken || rs.delivered
	rs.mu.Unlock()
	if !keep {
		rs.Cancel(errors.New("capnweb: ReadableStream was released without being consumed"))
	}
}

func (rs *ReadableStream) take() error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.taken {
		return typeErrorf("ReadableStream is locked: it was already sent")
	}
	rs.taken = true
	return nil
}

// Collect reads the whole stream. Chunks of bytes (or strings) are concatenated; a Blob body is
// read this way.
func (rs *ReadableStream) Collect(ctx context.Context) ([]byte, error) {
	var out []byte
	for v, err := range rs.All(ctx) {
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case []byte:
			out = append(out, x...)
		case TypedBytes:
			out = append(out, x.Data...)
		case string:
			out = append(out, x...)
		default:
			return nil, typeErrorf("stream chunk is not bytes")
		}
	}
	return out, nil
}

// ---- pipes: the receiving end ----

// pipeWriter is the writable end of a pipe the peer created: its stream calls feed a local
// ReadableStream.
type pipeWriter struct {
	rs *ReadableStream
	s  *Session
}

func newPipe(s *Session) (*ReadableStream, hook) {
	rs := newReceivedStream()
	return rs, &pipeWriter{rs: rs, s: s}
}

func (w *pipeWriter) call(path []any, args *payload) hook {
	name := ""
	if len(path) == 1 {
		name, _ = path[0].(string)
	}
	list, _ := args.v.([]any)
	switch name {
	case "write":
		var chunk any = Undefined
		if len(list) > 0 {
			chunk = list[0]
			list[0] = nil
		}
		args.release()
		p := newPromiseHook()
		w.rs.push(chunk, func(err error) {
			if err != nil {
				p.resolve(errorHook{err})
			} else {
				p.resolve(newValueHook(Undefined, true, w.s))
			}
		})
		return p
	case "close":
		args.release()
		w.rs.closeWrite()
		return newValueHook(Undefined, true, w.s)
	case "abort":
		var reason error = errors.New("capnweb: stream aborted by the writer")
		if len(list) > 0 {
			if e, ok := list[0].(*Error); ok {
				reason = e
			}
		}
		args.release()
		w.rs.fail(reason)
		return newValueHook(Undefined, true, w.s)
	}
	args.release()
	return errorHook{NewError("Error", "Unknown WritableStream method: "+joinPath(path))}
}

func (w *pipeWriter) get([]any) hook {
	return errorHook{NewError("Error", "Cannot access properties on a WritableStream stub")}
}
func (w *pipeWriter) remap(_ []any, captures []hook, _ []any) hook {
	releaseHooks(captures)
	return errorHook{NewError("Error", "Cannot use map() on a WritableStream")}
}
func (w *pipeWriter) dup() hook { return w }
func (w *pipeWriter) pull(context.Context) (any, error) {
	return nil, NewError("Error", "Cannot pull a WritableStream stub")
}
func (w *pipeWriter) release() {
	w.rs.mu.Lock()
	done := w.rs.eof || w.rs.err != nil
	w.rs.mu.Unlock()
	if !done {
		w.rs.fail(errors.New("capnweb: WritableStream was released without calling close()"))
	}
}

// ---- sending a ReadableStream ----

// readable writes ["readable", id] for a local stream: it opens a pipe on the peer and starts
// pumping the stream into it once the message is queued.
func (e *encoder) readable(rs *ReadableStream) error {
	e.streams = true
	if err := e.needSession("ReadableStream"); err != nil {
		return err
	}
	if err := rs.take(); err != nil {
		return err
	}
	s := e.s
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return err
	}
	if err := s.admitImportLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	id := s.nextImportID
	s.nextImportID++
	ent := &importEntry{id: id, remoteRefs: 1}
	s.imports[id] = ent
	ent.localRefs++
	remote := &importHook{s: s, e: ent}
	s.queueLocked([]byte(`["pipe"]`))
	if s.batch == batchClient {
		// Written into the batch when it is sent (batchflush.go): it is the only chance.
		f := s.batchFlush()
		f.pumps = append(f.pumps, batchPump{rs: rs, w: remote})
		s.mu.Unlock()
	} else {
		w := &WritableStream{remote: remote, fc: newFlowController()}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			pumpStream(s.ctx, rs, w)
		}()
	}
	e.tag("readable")
	e.b = appendInt(e.b, id)
	e.b = append(e.b, ']')
	return nil
}

func pumpStream(ctx context.Context, rs *ReadableStream, w *WritableStream) {
	defer w.remote.release()
	for {
		v, err := rs.Read(ctx)
		if err == io.EOF {
			w.Close(ctx)
			return
		}
		if err != nil {
			w.Abort(err)
			return
		}
		if err := w.Write(ctx, v); err != nil {
			rs.Cancel(err)
			return
		}
	}
}

// ---- WritableStream ----

// Sink receives the chunks written to a WritableStream made with NewWritableStream. Calls come
// one at a time, in order.
type Sink interface {
	Write(ctx context.Context, chunk any) error
	Close(ctx context.Context) error
	Abort(reason error)
}

// WritableStream is a stream to write values to: one received from the peer (writes travel to
// it with flow control), or one made locally with NewWritableStream and sent to the peer (the
// peer writes, the Sink receives).
type WritableStream struct {
	// remote side
	remote   hook
	fc       *flowController
	mu       sync.Mutex
	failed   error
	closed   bool
	released bool
	pending  sync.WaitGroup

	// local side
	sink Sink
	ser  sync.Mutex // serializes sink calls
}

// NewWritableStream returns a stream that delivers what the peer writes to sink.
func NewWritableStream(sink Sink) *WritableStream {
	return &WritableStream{sink: sink}
}

func newRemoteWritable(h hook) *WritableStream {
	return &WritableStream{remote: h, fc: newFlowController()}
}

var errLocalWritable = errors.New("capnweb: this WritableStream delivers to a local Sink; send it to the peer instead of writing to it")

// Write sends a chunk. It returns once the chunk is on its way, blocking only while the flow
// control window is full. An error means an earlier write failed or the stream ended.
func (w *WritableStream) Write(ctx context.Context, chunk any) error {
	if w.remote == nil {
		return errLocalWritable
	}
	w.mu.Lock()
	if w.failed != nil || w.closed {
		err := w.failed
		w.mu.Unlock()
		if err == nil {
			err = errors.New("capnweb: write after close")
		}
		return err
	}
	w.mu.Unlock()
	h, size := streamCall(w.remote, "write", []any{chunk})
	tok, block := w.fc.onSend(size)
	w.pending.Add(1)
	go func() {
		defer w.pending.Done()
		defer h.release()
		_, err := h.pull(context.WithoutCancel(ctx))
		if err != nil {
			w.fc.onError(tok)
			w.mu.Lock()
			if w.failed == nil {
				w.failed = err
			}
			w.mu.Unlock()
		} else {
			w.fc.onAck(tok)
		}
	}()
	if block {
		yieldGate(ctx)
		return w.fc.waitCapacity(ctx, func() error {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.failed
		})
	}
	return nil
}

// Close waits for every write to be acknowledged, then closes the stream. It returns the first
// write error, if any.
func (w *WritableStream) Close(ctx context.Context) error {
	if w.remote == nil {
		return errLocalWritable
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	failed := w.failed
	w.mu.Unlock()
	if failed != nil {
		return failed
	}
	yieldGate(ctx)
	h, _ := streamCall(w.remote, "close", nil)
	defer h.release()
	_, err := h.pull(ctx)
	w.pending.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return w.failed
	}
	return err
}

// Abort ends the stream abnormally; the reader sees reason.
func (w *WritableStream) Abort(reason error) {
	if w.remote == nil {
		return
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	h, _ := streamCall(w.remote, "abort", []any{reason})
	h.release()
}

// release drops a received WritableStream's reference to the peer's writer. The peer aborts
// the stream if it was not closed.
func (w *WritableStream) release() {
	if w.remote == nil {
		return
	}
	w.mu.Lock()
	h := w.remote
	released := w.released
	w.released = true
	w.mu.Unlock()
	if !released {
		go func() {
			w.pending.Wait() // let acknowledgements of writes in flight arrive first
			h.release()
		}()
	}
}

// streamCall sends a stream call (write/close/abort) and returns its acknowledgement and the
// message size.
func streamCall(h hook, method string, args []any) (hook, int) {
	if args == nil {
		args = []any{}
	}
	if ih, ok := h.(*importHook); ok {
		return ih.s.sendStream(ih.e, method, args)
	}
	return h.call([]any{method}, &payload{v: dupValue(args)}), 64
}

// writable writes ["writable", id] for a local WritableStream.
func (e *encoder) writable(w *WritableStream) error {
	e.streams = true
	if w.sink == nil {
		if w.remote != nil {
			return e.hookValue(w.remote, nil, false, 0)
		}
		return typeErrorf("Cannot serialize an empty WritableStream")
	}
	if err := e.needSession("WritableStream"); err != nil {
		return err
	}
	if e.s.batch == batchClient {
		return errBatchWritable
	}
	id, err := e.s.exportHook(&sinkHook{w: w, s: e.s})
	if err != nil {
		return err
	}
	e.exports = append(e.exports, id)
	e.tag("writable")
	e.b = appendInt(e.b, id)
	e.b = append(e.b, ']')
	return nil
}

// sinkHook is an exported local WritableStream: the peer's write/close/abort calls reach the
// Sink in order.
type sinkHook struct {
	w      *WritableStream
	s      *Session
	mu     sync.Mutex
	tail   chan struct{} // closed when the previous operation is done
	closed bool
}

func (h *sinkHook) call(path []any, args *payload) hook {
	name := ""
	if len(path) == 1 {
		name, _ = path[0].(string)
	}
	if name != "write" && name != "close" && name != "abort" {
		args.release()
		return errorHook{NewError("Error", "Unknown WritableStream method: "+joinPath(path))}
	}
	h.mu.Lock()
	prev := h.tail
	mine := make(chan struct{})
	h.tail = mine
	if name != "write" {
		h.closed = true
	}
	h.mu.Unlock()
	p := newPromiseHook()
	go func() {
		defer close(mine)
		defer args.release()
		if prev != nil {
			<-prev
		}
		ctx := context.Background()
		if h.s != nil {
			ctx = h.s.ctx
		}
		list, _ := args.v.([]any)
		var err error
		h.w.ser.Lock()
		switch name {
		case "write":
			var chunk any = Undefined
			if len(list) > 0 {
				chunk = list[0]
			}
			err = h.w.sink.Write(ctx, chunk)
		case "close":
			err = h.w.sink.Close(ctx)
		case "abort":
			var reason error = errors.New("capnweb: stream aborted")
			if len(list) > 0 {
				if e, ok := list[0].(*Error); ok {
					reason = e
				}
			}
			h.w.sink.Abort(reason)
		}
		h.w.ser.Unlock()
		p.resolve(resultHook(Undefined, err, h.s))
	}()
	return p
}

func (h *sinkHook) get([]any) hook {
	return errorHook{NewError("Error", "Cannot access properties on a WritableStream stub")}
}
func (h *sinkHook) remap(_ []any, captures []hook, _ []any) hook {
	releaseHooks(captures)
	return errorHook{NewError("Error", "Cannot use map() on a WritableStream")}
}
func (h *sinkHook) dup() hook { return h }
func (h *sinkHook) pull(context.Context) (any, error) {
	return nil, NewError("Error", "Cannot pull a WritableStream stub")
}
func (h *sinkHook) release() {
	h.mu.Lock()
	closed := h.closed
	h.closed = true
	h.mu.Unlock()
	if !closed {
		h.w.sink.Abort(errors.New("capnweb: WritableStream RPC stub was disposed without calling close()"))
	}
}

// sendStream sends ["stream", ["pipeline", id, [method], args]]: a call whose result is pulled
// and released implicitly. It returns the acknowledgement and the message size.
func (s *Session) sendStream(e *importEntry, method string, args []any) (hook, int) {
	if r := s.beginSend(e); r != nil {
		return r.call([]any{method}, &payload{v: dupValue(args)}), 64
	}
	s.sendMu.Lock()
	enc := encoder{s: s}
	enc.b = append(enc.b, `["stream",["pipeline",`...)
	enc.b = appendInt(enc.b, e.id)
	enc.b = append(enc.b, ',')
	enc.path([]any{method})
	enc.b = append(enc.b, ',')
	err := enc.array(args, 0)
	enc.b = append(enc.b, "]]"...)
	size := len(enc.b)
	h := s.finishPush(e, &enc, err, true)
	s.sendMu.Unlock()
	s.startResolving(enc.promises)
	return h, size
}

// ---- flow control (sender side), after the JS library's FlowController ----

const (
	fcInitialWindow = 256 << 10
	fcMaxWindow     = 1 << 30
	fcMinWindow     = 64 << 10
	fcStartupGrowth = 2.0
	fcSteadyGrowth  = 1.25
	fcDecay         = 0.90
	fcStartupExit   = 3
)

type flowController struct {
	mu              sync.Mutex
	cond            *sync.Cond
	window          float64
	inFlight        float64
	startup         bool
	delivered       float64
	deliveredTime   time.Time
	firstAck        time.Time
	firstDelivered  float64
	minRTT          time.Duration
	roundsNoGrowth  int
	lastRoundWindow float64
	roundStart      time.Time
	epoch           time.Time
}

type sendToken struct {
	sent                time.Time
	size                float64
	deliveredAtSend     float64
	deliveredTimeAtSend time.Time
	windowAtSend        float64
	fullAtSend          bool
}

func newFlowController() *flowController {
	fc := &flowController{window: fcInitialWindow, startup: true, minRTT: time.Duration(1<<63 - 1)}
	fc.cond = sync.NewCond(&fc.mu)
	return fc
}

func (fc *flowController) onSend(size int) (sendToken, bool) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.inFlight += float64(size)
	t := sendToken{sent: time.Now(), size: float64(size), deliveredAtSend: fc.delivered,
		deliveredTimeAtSend: fc.deliveredTime, windowAtSend: fc.window, fullAtSend: fc.inFlight >= fc.window}
	return t, t.fullAtSend
}

func (fc *flowController) onError(t sendToken) {
	fc.mu.Lock()
	fc.inFlight -= t.size
	fc.cond.Broadcast()
	fc.mu.Unlock()
}

func (fc *flowController) onAck(t sendToken) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	defer fc.cond.Broadcast()
	now := time.Now()
	fc.delivered += t.size
	fc.deliveredTime = now
	fc.inFlight -= t.size
	if rtt := now.Sub(t.sent); rtt < fc.minRTT {
		fc.minRTT = rtt
	}
	if fc.firstAck.IsZero() {
		fc.firstAck, fc.firstDelivered = now, fc.delivered
		return
	}
	baseTime, baseDelivered := t.deliveredTimeAtSend, t.deliveredAtSend
	if baseTime.IsZero() {
		baseTime, baseDelivered = fc.firstAck, fc.firstDelivered
	}
	interval := now.Sub(baseTime).Seconds()
	if interval <= 0 {
		return
	}
	bandwidth := (fc.delivered - baseDelivered) / interval
	growth := fcSteadyGrowth
	if fc.startup {
		growth = fcStartupGrowth
	}
	w := bandwidth * fc.minRTT.Seconds() * growth
	w = min(w, t.windowAtSend*growth)
	if t.fullAtSend {
		w = max(w, t.windowAtSend*fcDecay)
	} else {
		w = max(w, fc.window)
	}
	fc.window = max(min(w, fcMaxWindow), fcMinWindow)
	if fc.startup && !t.sent.Before(fc.roundStart) {
		if fc.window > fc.lastRoundWindow*fcSteadyGrowth {
			fc.roundsNoGrowth = 0
		} else if fc.roundsNoGrowth++; fc.roundsNoGrowth >= fcStartupExit {
			fc.startup = false
		}
		fc.roundStart = now
		fc.lastRoundWindow = fc.window
	}
}

// waitCapacity blocks until the bytes in flight fall below the window, failed reports an
// error, or ctx ends.
func (fc *flowController) waitCapacity(ctx context.Context, failed func() error) error {
	stop := context.AfterFunc(ctx, func() {
		fc.mu.Lock()
		fc.cond.Broadcast()
		fc.mu.Unlock()
	})
	defer stop()
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for fc.inFlight >= fc.window {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		fc.mu.Unlock()
		err := failed()
		fc.mu.Lock()
		if err != nil {
			return err
		}
		fc.cond.Wait()
	}
	return nil
}

// ---- Blob ----

func (e *encoder) blob(b *Blob) error {
	e.tag("blob")
	e.b = appendJSONString(e.b, b.Type)
	e.b = append(e.b, ',')
	data := b.Data
	if data == nil {
		data = []byte{}
	}
	if err := e.readable(ReadableStreamOf(data)); err != nil {
		return err
	}
	e.b = append(e.b, ']')
	return nil
}

func (ev *evaluator) blob(x []any, depth int) (any, error) {
	if len(x) != 3 {
		return nil, unknownSpecial(x)
	}
	typ, ok := x[1].(string)
	if !ok {
		return nil, unknownSpecial(x)
	}
	c, err := ev.eval(x[2], depth+1)
	if err != nil {
		return nil, err
	}
	rs, ok := c.(*ReadableStream)
	if !ok {
		releaseValue(c)
		return nil, typeErrorf("Blob content must be serialized as a ReadableStream.")
	}
	s := ev.im.session()
	return ev.track(&pending{h: s.spawn(func(ctx context.Context) (any, error) {
		data, err := rs.Collect(ctx)
		if err != nil {
			return nil, err
		}
		return Blob{Type: typ, Data: data}, nil
	})}), nil
}

func appendInt(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}
