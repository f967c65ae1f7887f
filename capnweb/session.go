package capnweb

// Session: one end of a capnweb connection, with its import and export tables.
//
// Concurrency model
//
//   - The read loop (one goroutine) receives and handles messages in order. It evaluates
//     expressions and delivers calls to hooks without holding any lock.
//   - The write loop (one goroutine) sends queued messages in order, then closes the transport
//     when the session ends.
//   - Local calls run in their own goroutines, started in arrival order (run), and tracked by wg.
//   - sendMu serializes "encode a message and queue it", so that IDs chosen while encoding (pipes,
//     pushes) follow the order of the messages on the wire.
//   - mu guards the tables, counters and the outbound queue. It is held only briefly and never
//     while calling a hook, the transport or application code.
//   - Lock order: sendMu, then mu. A hook method may take either, so none is held around one.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2awebcap/a2awebcap/internal/gopool"
)

// Transport carries whole messages (one JSON value each) between two sessions.
type Transport interface {
	// Send sends one message. It is called from one goroutine at a time.
	Send(ctx context.Context, msg []byte) error
	// Receive returns the next message; io.EOF (or any error) ends the session.
	Receive(ctx context.Context) ([]byte, error)
	// Close ends the transport; it must unblock a pending Send or Receive. reason is nil for a
	// normal close, or the error that aborted the session (a WebSocket closes with code 3000 and
	// the reason's text). It is called once.
	Close(reason error) error
}

// Options configure a session. The zero value (and nil) means the documented defaults.
type Options struct {
	// Limits bound what a peer may send; zero fields take DefaultLimits' values.
	Limits Limits
	// SendError, when set, converts every error sent to the peer (a failed call, an abort). A nil
	// return means the default: *Error values as they are, stack removed; any other error as
	// "Error: internal error".
	SendError func(err error) *Error
	// Logger receives session-level events (aborts). Nil means slog.Default().
	Logger *slog.Logger
	// Pool, when set, is memory the session shares with others: the bytes it holds for its peer
	// (Limits.MaxHeldBytes) count toward Pool and the pools above it too. Nil means none.
	Pool *Pool
}

// Limits bound what a peer may send a session and make it hold. Crossing one aborts the session
// with a message saying which. See docs/capnweb.md, "Limits and budgets".
type Limits struct {
	// MaxMessageSize: bytes per message; default 32 MiB. (The JS library allows 32 Mi UTF-16
	// code units: the same for ASCII text; a message of other text may have more bytes.)
	MaxMessageSize  int
	MaxDepth        int // nesting depth of an expression; default 256, as the JS library
	MaxBigIntDigits int // default 16384, as the JS library
	// MaxImports and MaxExports bound the entries of the import and export tables; default 0,
	// no count (the JS library has none): MaxHeldBytes bounds the tables. A count is a way to
	// hold a peer to a few calls at a time (a connection that has not logged in, say).
	MaxImports int
	MaxExports int
	// MaxPendingCalls bounds the local calls running at once for this peer: started and not
	// finished — blocked (each holds a goroutine), settling through a Deferred, or awaiting an
	// argument the peer has yet to resolve. Calls queued behind others do not count (a .map()
	// over 10,000 elements queues 10,000 calls): the budget bounds them. Default 4096.
	MaxPendingCalls int
	// MaxHeldBytes bounds the memory the session holds for its peer at once, in bytes, as the
	// session estimates it: its table entries and what the peer pushed, until released; its
	// local calls until they return; results not yet pulled and released; values the peer sent
	// for our promises, until released here; answers not yet written (an HTTP batch's whole
	// answer). Default 64 MiB; negative, no bound (Options.Pool may still bound it).
	MaxHeldBytes int64
}

// DefaultLimits are the limits used for zero fields of Options.Limits.
var DefaultLimits = Limits{
	MaxMessageSize:  32 << 20,
	MaxDepth:        256,
	MaxBigIntDigits: 16384,
	MaxPendingCalls: 4096,
	MaxHeldBytes:    64 << 20,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxMessageSize > 0 {
		d.MaxMessageSize = l.MaxMessageSize
	}
	if l.MaxDepth > 0 {
		d.MaxDepth = l.MaxDepth
	}
	if l.MaxBigIntDigits > 0 {
		d.MaxBigIntDigits = l.MaxBigIntDigits
	}
	if l.MaxImports > 0 {
		d.MaxImports = l.MaxImports
	}
	if l.MaxExports > 0 {
		d.MaxExports = l.MaxExports
	}
	if l.MaxPendingCalls > 0 {
		d.MaxPendingCalls = l.MaxPendingCalls
	}
	if l.MaxHeldBytes != 0 {
		d.MaxHeldBytes = l.MaxHeldBytes
	}
	return d
}

// full reports whether a table of n entries is at its count limit (0: none).
func full(n, limit int) bool { return limit > 0 && n >= limit }

// Session is one end of a capnweb connection. Both ends are alike: each may offer a main object
// and call the other's.
type Session struct {
	t         Transport
	sendError func(err error) *Error // Options.SendError
	limits    atomic.Pointer[Limits] // replaced whole by SetLimits
	budget    budget                 // bytes held for the peer (budget.go)
	log       *slog.Logger
	batch     batchMode

	ctx    context.Context // session lifetime: canceled when the session ends
	cancel context.CancelCauseFunc
	// tctx lives until the transport is closed (the write loop may still send the final abort
	// after ctx ends). Transports that honor contexts unblock with it.
	tctx      context.Context
	tcancel   context.CancelFunc
	closeOnce sync.Once
	// closeTimer closes the transport closeGrace after the session ended, if the write loop
	// has not by then; closeTransport stops it (a batch server makes thousands of sessions a
	// second, and each waiting timer slows every timer operation in the process). Under mu.
	closeTimer *time.Timer
	done       chan struct{}  // Done's; made on first call, guarded by mu
	wg         sync.WaitGroup // read loop, write loop, executor, local calls, export resolvers

	sendMu sync.Mutex

	mu              sync.Mutex
	cond            sync.Cond // on mu; signals: queue has messages, queue drained, pulls settled
	exports         map[int64]*exportEntry
	imports         map[int64]*importEntry
	nextExportID    int64 // next negative ID we choose
	nextPushID      int64 // ID of the next push the peer sends us
	nextImportID    int64 // ID of our next push
	out             [][]byte
	outBytes        int64         // the bytes of out, charged to the budget
	writing         bool          // the write loop is sending a batch
	writerActive    bool          // a write loop goroutine exists
	writerIdle      bool          // it is lingering, waiting for messages
	closing         bool          // (the bools together: an idle session's size matters)
	ended           bool          // shutdown has finished: Done is closed
	execActive      bool          // a goroutine (the read loop or an executor) owns execQ
	transportClosed bool          // closeTransport has run
	wokeWaiter      bool          // a pass settled an import someone awaits (endPass)
	writeWake       chan struct{} // wakes the lingering writer; nil while there is none
	err             error         // why the session ended; set once
	pulling         int
	running         int
	execQ           []execTask         // ready local calls, in order (exec.go)
	execBlocked     *execRun           // the executor, when its call is blocking (Blocking): hand off on the next call
	targets         map[any]*targetRef // nil until a Disposer is exported

	mainStub *Stub
	onEnd    func() // set by serveAsync: called when the session and its goroutines are done

	readResumes atomic.Int32 // times the read loop resumed after idling (changed under mu)
	readParks   atomic.Int32 // times it parked (changed under mu): more than readResumes while parked
	dupping     int32        // ensureResolving is dup'ing an export's hook, without mu (under mu)
	// passes counts the goroutines in a pass: the read loop while it handles what it has read
	// (the messages already buffered, one after another, and the calls they make ready), and a
	// goroutine finishing a call that was handed off (runReadyLocked). Meanwhile ready calls wait for
	// a pass to run them (runQueued, runReadyLocked) and outbound messages wait for a pass to send them
	// (endPass), with no hand-off between goroutines. Each pass ends with endPass, or in a
	// hand-off (handoffLocked).
	passes atomic.Int32

	busy atomic.Pointer[busyState] // what a session uses while messages flow; nil while idle
}

// busyState is what a session keeps between messages while they flow, and drops when it goes
// idle (dropBusy), so that an idle session costs less.
type busyState struct {
	scratch  []any          // the JSON reader's stack (read loop only)
	strs     map[string]any // the JSON reader's string table (read loop only)
	outSpare [][]byte       // a sent queue's slice, for the next (under mu)
	execBuf  []execTask     // the array of the last execQ, from its start, for the next (under mu)
	workers  *gopool.Pool   // goroutines for read loops and executors (goLocked); made there, under mu

	dog      *time.Timer // the watchdog (exec.go), made once
	dogOnce  sync.Once
	dogArmed atomic.Bool             // its timer is set to look
	dogRun   atomic.Pointer[execRun] // the run it watches
}

// busyState returns the session's busy state, making it if the session was idle.
func (s *Session) busyState() *busyState {
	if b := s.busy.Load(); b != nil {
		return b
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.busy.Load()
	if b == nil {
		b = &busyState{strs: map[string]any{}}
		s.busy.Store(b)
	}
	return b
}

// dropBusy lets the busy state go when nothing uses it: the read loop is going idle. If the
// writer, an executor or the watchdog still uses it, the last of them to finish drops it
// (dropParkedLocked), since no next idle time may come.
func (s *Session) dropBusy() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropBusyLocked()
}

// dropParkedLocked drops the busy state if the read loop is parked and nothing else uses it:
// for the writer, the executors and the watchdog as they finish. Caller holds s.mu.
// The read loop is parked while it has parked more often than it resumed (both counted under
// s.mu, so a resuming read loop never finds its state dropped under it).
func (s *Session) dropParkedLocked() {
	if s.readParks.Load() > s.readResumes.Load() {
		s.dropBusyLocked()
	}
}

// dropBusyLocked is dropBusy's work. Caller holds s.mu.
func (s *Session) dropBusyLocked() {
	b := s.busy.Load()
	if b == nil || b.dogRun.Load() != nil || s.execActive || s.writerActive {
		return
	}
	if b.dogArmed.Load() {
		return // the timer still holds it; the next idle time drops it
	}
	if b.workers != nil {
		b.workers.Close()
	}
	s.busy.Store(nil)
}

type batchMode int

const (
	notBatch batchMode = iota
	batchServer
	batchClient
)

type exportEntry struct {
	h            hook
	refs         int
	held         int64 // bytes charged to the budget for the entry, given back when it goes
	pulling      bool
	autoRelease  bool
	answered     bool // a batch client's: its resolution is in the batch, or on its way there
	pipeReadable *ReadableStream
}

type importEntry struct {
	id         int64
	localRefs  int
	remoteRefs int
	promise    bool
	res        hook          // resolution; set once
	done       chan struct{} // closed when res is set; made by the first to wait (pull), under mu
	pulled     bool
	inflight   int  // calls being encoded against this ID
	relPending bool // a release waits for inflight to reach zero
	gone       bool // removed from the table
	wantJSON   bool // the result is decoded into a json.RawMessage: read it as receivedJSON
	// first is the entry's first reference (newImportRef), made with it: most imports, the
	// promises of calls, only ever have the one.
	first      importHook
	firstTaken bool
}

// settled closes done, if the entry has one, once res is set. Caller holds mu.
func (e *importEntry) settled() {
	if e.done != nil {
		close(e.done)
	}
}

// NewSession starts a session over t. main is the object offered to the peer as its main stub
// (ID 0): a value embedding Target, a func, a *Stub, or nil for none. opts may be nil.
func NewSession(t Transport, main any, opts *Options) *Session {
	return newSession(t, main, opts, notBatch, true)
}

// newSession makes a session; with startReader false the caller runs s.serve() itself.
func newSession(t Transport, main any, opts *Options, mode batchMode, startReader bool) *Session {
	s := &Session{
		t:            t,
		batch:        mode,
		exports:      map[int64]*exportEntry{},
		imports:      map[int64]*importEntry{},
		nextExportID: -1,
		nextPushID:   1,
		nextImportID: 1,
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	s.sendError = o.SendError
	l := o.Limits.withDefaults()
	s.setLimits(l, o.Pool, true)
	s.log = o.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.cond.L = &s.mu
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.tctx, s.tcancel = context.WithCancel(context.Background())

	var mainHook hook
	switch m := main.(type) {
	case nil:
		mainHook = errorHook{NewError("Error", "This connection has no main object.")}
	case *Stub:
		h, err := m.hookRef()
		if err != nil {
			mainHook = errorHook{err}
		} else {
			mainHook = h.dup()
		}
	default:
		mainHook = s.exportableHook(main)
	}
	s.exports[0] = &exportEntry{h: mainHook, refs: 1}
	e := &importEntry{id: 0, localRefs: 1, remoteRefs: 1}
	s.imports[0] = e
	// No cleanup for the main stub, unlike any other: the session owns it, and a cleanup's
	// argument (the cell, whose hook leads back here) would keep the session reachable for
	// good, and so every session that ever ran.
	s.mainStub = &Stub{ref: ref{c: &cell{h: &importHook{s: s, e: e, main: true}}}}

	if startReader {
		s.wg.Add(1)
		go s.readLoop()
	}
	return s
}

// Main returns the peer's main object. The session owns it: do not release it; Close ends the
// session instead.
func (s *Session) Main() *Stub { return s.mainStub }

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil { // most sessions are never asked: an idle one holds no channel
		s.done = make(chan struct{})
		if s.ended {
			close(s.done)
		}
	}
	return s.done
}

// Err returns why the session ended (nil while it runs). A normal end is ErrSessionClosed.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Context returns the session's context, canceled with the session's error when it ends. Calls
// into local targets receive it.
func (s *Session) Context() context.Context { return s.ctx }

// Close ends the session normally: pending calls fail with ErrSessionClosed, exports are
// released, and the transport is closed. It waits for the session's goroutines. It is
// idempotent.
func (s *Session) Close() error {
	s.shutdown(ErrSessionClosed, false)
	s.wg.Wait()
	return nil
}

// Abort ends the session with err, sending it to the peer in an abort message.
func (s *Session) Abort(err error) {
	s.shutdown(err, true)
}

// Stats counts the entries in the session's tables, for tests and monitoring.
type Stats struct {
	Imports, Exports int
}

// Stats returns the table sizes, counting the two main entries.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Imports: len(s.imports), Exports: len(s.exports)}
}

// ---- the two loops ----

// serve runs the read loop in the calling goroutine until the session ends, then waits for the
// session's goroutines. (A Handler serves each WebSocket this way: no extra goroutine.)
func (s *Session) serve() {
	s.wg.Add(1)
	s.readLoop()
	s.wg.Wait()
}

// serveAsync runs the read loop in a goroutine of its own and calls onEnd once the session and
// all its goroutines have finished.
func (s *Session) serveAsync(onEnd func()) {
	s.onEnd = onEnd
	s.wg.Add(1)
	go s.readLoop()
}

// errTransportIdle is returned by a transport's Receive when nothing arrived for a while. The
// read loop then parks the session when the transport can (a parker), so that an idle session
// holds no goroutine at all; else it goes on in a fresh goroutine, so that the stack it grew
// while handling messages is freed and an idle session costs a small one.
var errTransportIdle = errors.New("capnweb: transport idle")

// parker is a transport that can wait for input with no goroutine: Park arranges for wake to
// run once, in a goroutine of its own, when input arrives or the transport is closed, or
// reports false when it cannot.
type parker interface {
	Park(wake func()) bool
}

// idleWaiter is a transport that can wait for input without a read buffer and with little stack
// (see errTransportIdle).
type idleWaiter interface {
	WaitReadable()
}

// resumeRead is the read loop of a session that was idle: it waits in a shallow frame, so its
// fresh goroutine's stack stays at the minimum until a message arrives.
func (s *Session) resumeRead() {
	s.mu.Lock()
	s.readResumes.Add(1)
	s.mu.Unlock()
	if w, ok := s.t.(idleWaiter); ok {
		w.WaitReadable()
	}
	s.readLoop()
}

// idle hands the read loop, which counts in wg, to a parked wake-up or to a fresh goroutine.
func (s *Session) idle() {
	s.dropBusy()
	s.wg.Add(1)
	if p, ok := s.t.(parker); ok {
		s.mu.Lock()
		s.readParks.Add(1) // before it may resume
		s.mu.Unlock()
		if p.Park(s.resumeRead) {
			return
		}
		s.mu.Lock()
		s.readParks.Add(-1)
		s.mu.Unlock()
	}
	go s.resumeRead()
}

func (s *Session) readLoop() {
	restart := false
	inPass := 0 // messages handled in this pass
	var claim readerClaim
	defer func() {
		s.wg.Done()
		if !restart && s.onEnd != nil {
			s.wg.Wait()
			s.onEnd()
		}
	}()
	for {
		// Not s.ctx: the write loop may still have an abort message to send after the session
		// ended. Closing the transport ends the read.
		msg, err := s.t.Receive(s.tctx)
		if err != nil && inPass > 0 {
			s.endPass() // the buffered bytes were not a whole message
		}
		if err == errTransportIdle {
			restart = true
			s.idle()
			return
		}
		if err != nil {
			var ae *abortError
			switch {
			case s.ctx.Err() != nil:
			case errors.As(err, &ae):
				s.shutdown(err, true)
			default:
				s.shutdown(fmt.Errorf("capnweb: transport: %w", err), false)
			}
			return
		}
		if max := s.lim().MaxMessageSize; len(msg) > max {
			s.shutdown(typeErrorf("Incoming message exceeds maximum size of %d bytes.", max), true)
			return
		}
		if inPass == 0 {
			s.passes.Add(1)
		}
		if err := s.handle(msg); err != nil {
			s.endPass()
			s.shutdown(err, true)
			return
		}
		if s.ctx.Err() != nil {
			s.endPass()
			return
		}
		if !s.runQueued(&claim) {
			restart = true // a call blocked: the read loop went on in another goroutine
			return
		}
		if inPass++; inPass >= maxPass || !s.buffered() {
			s.endPass()
			inPass = 0
		}
	}
}

// yieldBelow: the write loop yields once before sending fewer messages than this.
const yieldBelow = 16

// maxPass bounds the messages of one pass, so that a peer that keeps the read buffer full
// still gets its answers.
const maxPass = 64

// buffered reports whether the transport holds more received bytes, so that the pass may go on
// without waiting.
func (s *Session) buffered() bool {
	b, ok := s.t.(interface{ Buffered() bool })
	return ok && b.Buffered()
}

// tryBatchSender is a Transport that can send without waiting, or refuse to (the WebSocket
// transport on plain TCP, Linux).
type tryBatchSender interface {
	// TrySendBatch sends msgs, in order, unless that means waiting; it reports whether it took
	// them (it may finish sending them in the background; later sends go after).
	TrySendBatch(msgs [][]byte) (bool, error)
}

// endPass ends a pass: it sends what is queued, itself when the transport can do that without
// waiting and no write is under way, else by the write loop; and it starts an executor for
// ready calls that arrived meanwhile from elsewhere.
func (s *Session) endPass() {
	ts, ok := s.t.(tryBatchSender)
	s.mu.Lock()
	if n := len(s.out); ok && n > 0 && n < yieldBelow && s.running > 0 && !s.closing {
		// Other calls are running: let those whose results are in already (goroutines woken
		// and ready to run) queue their answers first, so that one write carries them all.
		// A write costs far more than the yield.
		s.mu.Unlock()
		runtime.Gosched()
		s.mu.Lock()
	}
	s.passes.Add(-1)
	if !s.execActive && len(s.execQ) > 0 {
		s.startExecutorLocked()
	}
	woke := s.wokeWaiter // this pass's: a later one must not inherit it
	s.wokeWaiter = false
	if len(s.out) == 0 {
		s.mu.Unlock()
		return
	}
	if !ok || woke || s.writing || s.writerActive && !s.writerIdle || s.closing {
		// A goroutine this pass woke with its result typically calls again at once: the write
		// loop, which yields once before it writes, then sends what this pass queued (releases,
		// mostly) with those calls, in one write.
		s.kickWriterLocked()
		s.mu.Unlock()
		return
	}
	batch, size := s.takeOutLocked()
	s.writing = true
	s.mu.Unlock()
	took, err := ts.TrySendBatch(batch)
	s.mu.Lock()
	s.writing = false
	if took {
		s.recycleOutLocked(batch)
		s.uncharge(size)
	} else {
		s.out = append(batch, s.out...)
		s.outBytes += size
	}
	if len(s.out) > 0 {
		s.kickWriterLocked()
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	if err != nil {
		s.shutdown(fmt.Errorf("capnweb: transport: %w", err), false)
	}
}

// closeGrace bounds how long the write loop may keep sending after the session ended.
const closeGrace = 5 * time.Second

// closeTransport closes the transport once, with the session's end reason.
func (s *Session) closeTransport() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		reason := s.err
		s.transportClosed = true
		if s.closeTimer != nil {
			s.closeTimer.Stop()
		}
		s.mu.Unlock()
		if errors.Is(reason, ErrSessionClosed) {
			reason = nil
		}
		s.t.Close(reason)
		s.tcancel()
	})
}

// kickWriterLocked makes sure a write loop will look at the queue. Caller holds mu.
func (s *Session) kickWriterLocked() {
	switch {
	case !s.writerActive:
		s.writerActive = true
		s.writeWake = make(chan struct{}, 1)
		s.wg.Add(1)
		go s.writeLoop()
	case s.writerIdle:
		s.writerIdle = false
		select {
		case s.writeWake <- struct{}{}:
		default:
		}
	}
}

// writeLoop sends queued messages in order. It runs while there is something to send, lingers
// briefly, and exits; once the session is closing and the queue is empty it closes the
// transport.
func (s *Session) writeLoop() {
	defer s.wg.Done()
	var linger *time.Timer
	yielded := false
	for {
		s.mu.Lock()
		for s.writing {
			s.cond.Wait() // the read loop is sending (endPass)
		}
		if len(s.out) == 0 {
			if s.closing {
				s.writerActive, s.writeWake = false, nil
				s.cond.Broadcast()
				s.mu.Unlock()
				s.closeTransport()
				return
			}
			s.writerIdle = true
			wake := s.writeWake
			s.mu.Unlock()
			// The writer waits out the linger even after the session ended: it must still
			// close the transport, which the next pass does.
			if lingerFor(&linger, wake) {
				continue
			}
			s.mu.Lock()
			s.writerIdle = false
			if len(s.out) == 0 && !s.closing {
				s.writerActive, s.writeWake = false, nil
				s.dropParkedLocked()
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			continue
		}
		if !yielded && len(s.out) < yieldBelow && !s.closing {
			// Let the goroutines that are ready to queue more (callers woken by the answers
			// just read, typically) do so first: one write then carries them all.
			yielded = true
			s.mu.Unlock()
			runtime.Gosched()
			continue
		}
		yielded = false
		batch, size := s.takeOutLocked()
		s.writing = true
		s.mu.Unlock()
		if err := s.sendAll(batch); err != nil {
			s.shutdown(fmt.Errorf("capnweb: transport: %w", err), false)
		}
		s.uncharge(size)
		s.mu.Lock()
		s.recycleOutLocked(batch)
		s.writing = false
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// writeLinger is how long an idle write loop waits for more to send before it exits.
const writeLinger = 20 * time.Millisecond

// lingerFor waits up to writeLinger for a wake-up on wake, reusing *t as its timer. It reports
// whether it was woken (false: the time passed).
func lingerFor(t **time.Timer, wake <-chan struct{}) bool {
	if *t == nil {
		*t = time.NewTimer(writeLinger)
	} else {
		(*t).Reset(writeLinger)
	}
	select {
	case <-wake:
		(*t).Stop()
		return true
	case <-(*t).C:
		return false
	}
}

// takeOutLocked takes the outbound queue to send it, and the bytes its messages were charged
// (queueLocked), which the caller gives back once they are sent. Caller holds mu.
func (s *Session) takeOutLocked() ([][]byte, int64) {
	batch, size := s.out, s.outBytes
	s.out, s.outBytes = nil, 0
	return batch, size
}

// recycleOutLocked keeps a sent batch's slice for the next queue, unless it grew large.
// Caller holds mu.
func (s *Session) recycleOutLocked(batch [][]byte) {
	if b := s.busy.Load(); b != nil && cap(batch) <= 256 {
		clear(batch)
		b.outSpare = batch[:0]
	}
}

// batchSender is a Transport that can send several messages at once, in order, as cheaply as
// one (the WebSocket transport: one write system call).
type batchSender interface {
	SendBatch(ctx context.Context, msgs [][]byte) error
}

// sendAll sends msgs in order, together when the transport can.
func (s *Session) sendAll(msgs [][]byte) error {
	if bs, ok := s.t.(batchSender); ok && len(msgs) > 1 {
		return bs.SendBatch(s.tctx, msgs)
	}
	for _, m := range msgs {
		if err := s.t.Send(s.tctx, m); err != nil {
			return err
		}
	}
	return nil
}

// directSender is a Transport whose sending only appends to a buffer, never waits and never
// fails (the HTTP batch transports): the session hands it each message as it queues it, with no
// queue and no write loop.
type directSender interface {
	sendNow(msg []byte)
}

// queueLocked appends a message to the outbound queue. Caller holds mu.
func (s *Session) queueLocked(msg []byte) {
	if s.err != nil {
		return
	}
	if s.batch != notBatch {
		if d, ok := s.t.(directSender); ok {
			// A batch server holds its whole answer until the batch ends.
			if s.batch == batchServer && s.charge(int64(len(msg))) != nil {
				return
			}
			d.sendNow(msg)
			return
		}
	}
	// Held until the transport has taken it: a peer that does not read cannot make it pile up.
	if s.charge(int64(len(msg))) != nil {
		return
	}
	s.outBytes += int64(len(msg))
	if s.out == nil {
		if b := s.busy.Load(); b != nil {
			s.out, b.outSpare = b.outSpare, nil
		}
	}
	s.out = append(s.out, msg)
	if s.passes.Load() == 0 {
		s.kickWriterLocked() // else the pass sends it when it ends
	}
}

// flush waits until every queued message has been handed to the transport (or the session
// has ended and its writer is gone).
func (s *Session) flush() {
	s.mu.Lock()
	for len(s.out) > 0 && s.writerActive || s.writing {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

// shutdown ends the session once: records err, queues an abort message if asked, fails every
// pending import, releases every export, and lets the write loop close the transport.
func (s *Session) shutdown(err error, sendAbort bool) {
	var abortMsg []byte
	if sendAbort {
		enc := encoder{s: s}
		enc.b = append(enc.b, `["abort",`...)
		enc.errorValue(s.wireError(err), 0)
		enc.b = append(enc.b, ']')
		abortMsg = enc.b
	}
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	if abortMsg != nil {
		s.out = append(s.out, abortMsg)
	}
	s.err = err
	s.closing = true
	if b := s.busy.Load(); b != nil && b.workers != nil {
		b.workers.Close()
	}
	s.kickWriterLocked()
	exports := s.exports
	imports := s.imports
	s.exports = map[int64]*exportEntry{}
	s.imports = map[int64]*importEntry{}
	s.cond.Broadcast()
	for s.dupping > 0 {
		s.cond.Wait() // an export's hook is being dup'ed (ensureResolving): release it after
	}
	s.mu.Unlock()

	if sendAbort && !errors.Is(err, ErrSessionClosed) {
		s.log.Debug("capnweb: session aborted", "err", err)
	}
	s.cancel(err)
	// A peer that stopped reading cannot hold the session open: the transport closes anyway.
	s.mu.Lock()
	if !s.transportClosed {
		s.closeTimer = time.AfterFunc(closeGrace, s.closeTransport)
	}
	s.mu.Unlock()
	broken := err
	if errors.Is(err, ErrSessionClosed) {
		broken = ErrSessionClosed
	}
	for _, e := range imports {
		s.mu.Lock()
		e.gone = true
		var res hook
		if e.res == nil {
			e.res = errorHook{broken}
			e.settled()
		} else if e.localRefs == 0 {
			res = e.res
		}
		s.mu.Unlock()
		if res != nil {
			res.release()
		}
	}
	for _, x := range exports {
		x.h.release()
		if x.pipeReadable != nil {
			x.pipeReadable.fail(broken)
		}
	}
	s.endBudget()
	s.mu.Lock()
	s.ended = true
	if s.done != nil {
		close(s.done)
	}
	s.mu.Unlock()
}

// resultHook turns what a Go function returned into the hook that settles its promise.
func resultHook(v any, err error, s *Session) hook {
	if err != nil {
		return errorHook{err}
	}
	switch x := v.(type) {
	case hook:
		return x
	case *Deferred:
		return x.hook()
	case *Promise:
		// The application handed us its promise: we take it over.
		h := x.c.take()
		if h == nil {
			return errorHook{ErrReleased}
		}
		x.cleanup.Stop()
		if len(x.path) > 0 {
			g := h.get(x.path)
			h.release()
			return g
		}
		return h
	}
	return s.holdValue(newValueHook(v, false, s), heldSize(v))
}

// exportableHook returns the hook to export for a local value: one that counts as a reference
// to a Disposer target, so that its Dispose runs when the peer lets go of it.
func (s *Session) exportableHook(v any) hook { return newLocalHook(v, s) }

// ---- the export side ----

// exportHook adds an export with a fresh negative ID, taking ownership of h.
// For a promise, the caller starts resolving it (startResolving) once the message naming it is
// queued: a resolution must not overtake the message that introduces the ID.
func (s *Session) exportHook(h hook) (int64, error) {
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		h.release()
		return 0, err
	}
	err := s.admitExportLocked(entryCost)
	if err != nil {
		s.mu.Unlock()
		h.release()
		return 0, err
	}
	id := s.nextExportID
	s.nextExportID--
	s.exports[id] = &exportEntry{h: h, refs: 1, held: entryCost}
	s.mu.Unlock()
	return id, nil
}

// startResolving sends the resolutions of promises exported in a message just queued. The
// caller must not hold sendMu: a settled promise is answered at once.
func (s *Session) startResolving(ids []int64) {
	for _, id := range ids {
		s.ensureResolving(id)
	}
}

// unexport drops exports made while encoding a message that then failed.
func (s *Session) unexport(ids []int64) {
	for _, id := range ids {
		s.releaseExport(id, 1)
	}
}

func (s *Session) releaseExport(id int64, n int) error {
	s.mu.Lock()
	e := s.exports[id]
	if e == nil {
		s.mu.Unlock()
		return protocolErrorf("no such export ID: %d", id)
	}
	if e.refs < n || n < 1 {
		s.mu.Unlock()
		return protocolErrorf("refcount would go negative: %d < %d", e.refs, n)
	}
	e.refs -= n
	if e.refs > 0 {
		s.mu.Unlock()
		return nil
	}
	delete(s.exports, id)
	s.mu.Unlock()
	s.uncharge(e.held)
	e.h.release()
	if e.pipeReadable != nil {
		e.pipeReadable.fail(errors.New("capnweb: pipe released before it was read"))
	}
	return nil
}

// admitExportLocked makes room for one more export entry charged held bytes, or says why there
// is none. Caller holds mu.
func (s *Session) admitExportLocked(held int64) error {
	if max := s.lim().MaxExports; full(len(s.exports), max) {
		return protocolErrorf("export table is full (limit %d): release what you no longer use", max)
	}
	return s.charge(held)
}

// admitImportLocked makes room for one more import entry, or says why there is none. Caller
// holds mu.
func (s *Session) admitImportLocked() error {
	if max := s.lim().MaxImports; full(len(s.imports), max) {
		return protocolErrorf("import table is full (limit %d): release what you no longer use", max)
	}
	return s.charge(entryCost)
}

// ensureResolving starts sending the resolution of an export once it settles (a pull).
func (s *Session) ensureResolving(id int64) error {
	s.mu.Lock()
	e := s.exports[id]
	if e == nil {
		s.mu.Unlock()
		return protocolErrorf("no such export ID: %d", id)
	}
	if e.pulling || s.err != nil {
		s.mu.Unlock()
		return nil
	}
	e.pulling = true
	s.pulling++
	// The hook is dup'ed without mu: many a hook's dup takes it (an import of this session, a
	// target counting its references). Only shutdown can release the export meanwhile (the
	// peer's releases are read after this returns), and it waits for dupping to reach zero.
	h0 := e.h
	auto := e.autoRelease
	s.dupping++
	s.mu.Unlock()
	h := h0.dup()
	s.mu.Lock()
	if s.dupping--; s.dupping == 0 {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
	if p, ok := h.(*promiseHook); ok {
		// The usual case, a local call: answer from the goroutine that settles it.
		p.onSettled(func() { s.answer(id, h, auto, false) })
		return nil
	}
	s.answer(id, h, auto, false)
	return nil
}

// answer sends the resolution of export id once h settles, releasing h. It does not block the
// caller: when the value is not at hand it waits in a new goroutine.
func (s *Session) answer(id int64, h hook, auto bool, blocking bool) {
	var v any
	var err error
	if blocking {
		v, err = s.answerPull(s.ctx, h)
	} else {
		var ok bool
		if v, err, ok = s.tryAnswerPull(h); !ok {
			s.mu.Lock()
			if s.err != nil {
				s.mu.Unlock()
				h.release()
				s.pullDone()
				return
			}
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				s.answer(id, h, auto, true)
			}()
			return
		}
	}
	if s.batch != batchClient || s.claimAnswer(id) {
		s.sendResolution(id, v, err)
		if s.batch == batchClient {
			s.answerQueued()
		}
	}
	releaseValue(v)
	h.release()
	if auto {
		s.releaseExport(id, 1)
	}
	s.pullDone()
}

func (s *Session) pullDone() {
	s.mu.Lock()
	s.pulling--
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *Session) sendResolution(id int64, v any, err error) {
	var promises []int64
	defer func() { s.startResolving(promises) }()
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err == nil {
		enc := encoder{s: s, b: make([]byte, 0, 64)} // room for a small result: no regrowth
		enc.b = append(enc.b, `["resolve",`...)
		enc.b = strconv.AppendInt(enc.b, id, 10)
		enc.b = append(enc.b, ',')
		err = enc.value(v, 0)
		enc.b = append(enc.b, ']')
		if enc.queue(err) == nil {
			promises = enc.promises
			return
		}
	}
	enc := encoder{s: s}
	enc.b = append(enc.b, `["reject",`...)
	enc.b = strconv.AppendInt(enc.b, id, 10)
	enc.b = append(enc.b, ',')
	enc.errorValue(s.wireError(err), 0)
	enc.b = append(enc.b, ']')
	if enc.queue(nil) == nil {
		promises = enc.promises
	}
}

// ---- the import side ----

// importHook is an entry of the import table: a remote capability or a remote promise.
type importHook struct {
	s        *Session
	e        *importEntry
	main     bool
	released atomic.Bool
}

func (s *Session) newImportRef(e *importEntry) *importHook {
	e.localRefs++
	if !e.firstTaken {
		e.firstTaken = true
		e.first.s, e.first.e = s, e
		return &e.first
	}
	return &importHook{s: s, e: e}
}

func (h *importHook) dup() hook {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newImportRef(h.e)
}

func (h *importHook) release() {
	if h.main {
		return // the session's own reference; Close ends the session
	}
	if h.released.Swap(true) {
		return
	}
	s, e := h.s, h.e
	s.mu.Lock()
	e.localRefs--
	if e.localRefs > 0 {
		s.mu.Unlock()
		return
	}
	res := e.res
	if res == nil || !e.gone {
		s.releaseImportLocked(e)
	}
	s.mu.Unlock()
	if res != nil {
		res.release()
	}
}

// releaseImportLocked tells the peer we are done with e (once every call being encoded
// against it has been queued) and removes it from the table. Caller holds mu.
func (s *Session) releaseImportLocked(e *importEntry) {
	if e.gone {
		return
	}
	if e.inflight > 0 {
		e.relPending = true
		return
	}
	e.gone = true
	if s.imports[e.id] == e {
		delete(s.imports, e.id)
		if e.id != 0 {
			s.uncharge(entryCost)
		}
	}
	if e.remoteRefs > 0 {
		msg := append(make([]byte, 0, 32), `["release",`...) // no regrowth for the numbers
		msg = strconv.AppendInt(msg, e.id, 10)
		msg = append(msg, ',')
		msg = strconv.AppendInt(msg, int64(e.remoteRefs), 10)
		msg = append(msg, ']')
		e.remoteRefs = 0
		s.queueLocked(msg)
	}
}

// resolution returns the settled hook, or nil while the import is pending.
func (h *importHook) resolution() hook {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.e.res
}

func (h *importHook) call(path []any, args *payload) hook {
	if r := h.resolution(); r != nil {
		return r.call(path, args.owned())
	}
	return h.s.sendCall(h.e, path, "", args)
}

// callName is call with the path [name], which a call sent to the peer encodes without making
// it.
func (h *importHook) callName(name string, args *payload) hook {
	if r := h.resolution(); r != nil {
		return r.call([]any{name}, args.owned())
	}
	return h.s.sendCall(h.e, nil, name, args)
}

func (h *importHook) get(path []any) hook {
	if r := h.resolution(); r != nil {
		return r.get(path)
	}
	if len(path) == 0 {
		return h.dup()
	}
	return h.s.sendCall(h.e, path, "", nil)
}

func (h *importHook) remap(path []any, captures []hook, instrs []any) hook {
	if r := h.resolution(); r != nil {
		return r.remap(path, captures, instrs)
	}
	return h.s.sendRemap(h.e, path, captures, instrs)
}

func (h *importHook) pull(ctx context.Context) (any, error) {
	s, e := h.s, h.e
	s.mu.Lock()
	if e.res == nil {
		if !e.promise {
			// A stub, not a promise: it is its own value.
			s.mu.Unlock()
			return newStub(h.dup()), nil
		}
		if s.batch == batchServer {
			// Only a resolution later in the same batch can come (a promise the client sent):
			// wait for the rest of the batch to be read, no longer.
			s.mu.Unlock()
			return h.pullInBatch(ctx)
		}
		if !e.pulled && !e.gone {
			e.pulled = true
			msg := append(make([]byte, 0, 24), `["pull",`...) // no regrowth for the number
			msg = strconv.AppendInt(msg, e.id, 10)
			msg = append(msg, ']')
			s.queueLocked(msg)
		}
	}
	r := e.res
	if r == nil && e.done == nil {
		e.done = make(chan struct{}) // made for the first waiter: most results are in by then
	}
	done := e.done
	s.mu.Unlock()
	if r == nil {
		if s.batch == batchClient {
			s.flushBatch(ctx)
		}
		yieldGate(ctx)
		select {
		case <-done:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		s.mu.Lock()
		r = e.res
		s.mu.Unlock()
	}
	return r.pull(ctx)
}

// flushBatch has a batch client's transport send the batch, once, in the goroutine awaiting
// a result with ctx. Every result still wanted is pulled: the batch is the only chance to
// receive it. What the server may wait for goes in too (sealBatch): the resolution of every
// promise sent, and the content of every stream.
func (s *Session) flushBatch(ctx context.Context) {
	f, _ := s.t.(batchFlusher)
	if f != nil && f.flushed() {
		return
	}
	if !s.sealBatch(ctx) {
		return // another goroutine is sending it
	}
	s.mu.Lock()
	for id, e := range s.imports {
		if e.promise && !e.pulled && !e.gone && e.res == nil && e.localRefs > 0 {
			e.pulled = true
			s.queueLocked(append(appendInt([]byte(`["pull",`), id), ']'))
		}
	}
	s.mu.Unlock()
	if f != nil {
		f.flushBatch() // the messages are in it already: a batch session sends as it queues
	}
}

// batchFlusher is the batch client's transport.
type batchFlusher interface {
	flushBatch()   // sends the batch, once
	flushed() bool // reports whether it has
}

// beginSend reserves e for a call being encoded; it returns the resolution instead when e has
// settled (the call must then go there).
func (s *Session) beginSend(e *importEntry) hook {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.res != nil {
		return e.res
	}
	e.inflight++
	return nil
}

func (s *Session) endSendLocked(e *importEntry) {
	e.inflight--
	if e.inflight == 0 && e.relPending {
		e.relPending = false
		s.releaseImportLocked(e)
	}
}

// sendCall sends ["push", ["pipeline", id, path, args]] and returns the import for its result;
// a name that is not "" stands for the path [name]. It takes ownership of args.
func (s *Session) sendCall(e *importEntry, path []any, name string, args *payload) hook {
	if r := s.beginSend(e); r != nil {
		if name != "" {
			path = []any{name}
		}
		return r.call(path, args.owned())
	}
	s.sendMu.Lock()
	enc := encoder{s: s, b: make([]byte, 0, 128)} // room for a typical call: no regrowth
	enc.b = append(enc.b, `["push",["pipeline",`...)
	enc.b = strconv.AppendInt(enc.b, e.id, 10)
	enc.b = append(enc.b, ',')
	if name != "" {
		enc.b = append(enc.b, '[')
		enc.b = appendJSONString(enc.b, name)
		enc.b = append(enc.b, ']')
	} else {
		enc.path(path)
	}
	var err error
	if args != nil {
		enc.b = append(enc.b, ',')
		list, _ := args.v.([]any)
		err = enc.array(list, 0)
		args.release()
		if args.borrowed && (enc.streams || err != nil) {
			// The call hands its streams over, as when its arguments were the call's own
			// (released above): the caller's stubs and promises stay the caller's.
			releaseStreams(args.v)
		}
	}
	enc.b = append(enc.b, "]]"...)
	h := s.finishPush(e, &enc, err, false)
	s.sendMu.Unlock()
	s.startResolving(enc.promises)
	return h
}

// finishPush queues an encoded push (or stream) message and creates the import entry for its
// result, or undoes what encoding did if it failed. It frees the entries reserved while
// encoding, and e, the import the message targets.
func (s *Session) finishPush(e *importEntry, enc *encoder, err error, stream bool) hook {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer enc.doneLocked()
	if e != nil {
		defer s.endSendLocked(e)
	}
	if err == nil && s.err != nil {
		err = s.err
	}
	if err == nil {
		err = s.admitImportLocked()
	}
	if err != nil {
		s.mu.Unlock()
		s.unexport(enc.exports)
		s.mu.Lock()
		enc.promises = nil
		return errorHook{err}
	}
	id := s.nextImportID
	s.nextImportID++
	ne := &importEntry{id: id, remoteRefs: 1, promise: true}
	if stream {
		// Pulled and released implicitly: no pull or release message.
		ne.remoteRefs, ne.pulled = 0, true
	}
	s.imports[id] = ne
	s.queueLocked(enc.b)
	return s.newImportRef(ne)
}

// sendRemap sends ["push", ["remap", id, path, captures, instrs]]. It takes ownership of
// captures.
func (s *Session) sendRemap(e *importEntry, path []any, captures []hook, instrs []any) hook {
	if r := s.beginSend(e); r != nil {
		return r.remap(path, captures, instrs)
	}
	defer releaseHooks(captures)
	s.sendMu.Lock()
	enc := encoder{s: s}
	enc.b = append(enc.b, `["push",["remap",`...)
	enc.b = strconv.AppendInt(enc.b, e.id, 10)
	enc.b = append(enc.b, ',')
	enc.path(path)
	enc.b = append(enc.b, ",["...)
	var err error
	for i, c := range captures {
		if i > 0 {
			enc.b = append(enc.b, ',')
		}
		if id, ok := s.importID(c); ok {
			enc.b = append(enc.b, `["import",`...)
			enc.b = strconv.AppendInt(enc.b, id, 10)
		} else {
			var id int64
			id, err = s.exportHook(c.dup())
			if err != nil {
				break
			}
			enc.exports = append(enc.exports, id)
			enc.b = append(enc.b, `["export",`...)
			enc.b = strconv.AppendInt(enc.b, id, 10)
		}
		enc.b = append(enc.b, ']')
	}
	enc.b = append(enc.b, "],"...)
	if err == nil {
		err = enc.raw(instrs, 0)
	}
	enc.b = append(enc.b, "]]"...)
	h := s.finishPush(e, &enc, err, false)
	s.sendMu.Unlock()
	s.startResolving(enc.promises)
	return h
}

// refImport reports whether h is a pending import of this session, and if so reserves its entry
// (like beginSend) so that it is not released before the message referring to it is queued.
// A settled import is not referred to by ID: its resolution is sent instead.
func (s *Session) refImport(h hook) (*importEntry, hook, bool) {
	ih, ok := h.(*importHook)
	if !ok || ih.s != s {
		return nil, nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := ih.e
	if e.res != nil && e.id != 0 {
		return nil, e.res, false
	}
	if e.gone && e.id != 0 {
		return nil, nil, false
	}
	e.inflight++
	return e, nil, true
}

// importID reports whether h is an import of this session, and its ID, for map captures.
func (s *Session) importID(h hook) (int64, bool) {
	ih, ok := h.(*importHook)
	if !ok || ih.s != s {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ih.e.gone && ih.e.id != 0 {
		return 0, false
	}
	return ih.e.id, true
}
