package capnweb

// HTTP transports: WebSocket (one session per connection) and HTTP batch (one session per POST,
// newline-delimited messages), served together by Handler, and their clients.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2awebcap/a2awebcap/internal/gopool"
	"github.com/a2awebcap/a2awebcap/internal/ws"
)

// HandlerOptions configure a Handler. Nil means the documented defaults.
type HandlerOptions struct {
	// Session configures every session the handler starts.
	Session Options
	// OriginPatterns lists the host patterns (path.Match syntax) allowed to open a WebSocket from
	// a browser page of another origin. Nil allows same-origin pages and non-browser clients only.
	OriginPatterns []string
	// MaxBatchBytes bounds an HTTP batch request body. Zero means the session's
	// Limits.MaxMessageSize (32 MiB by default). A body over the session's MaxHeldBytes is
	// refused too: it would be held whole.
	MaxBatchBytes int64
	// BatchBase and BatchPerByte bound what one HTTP batch may make the server hold, its answer
	// included: BatchBase bytes plus BatchPerByte times the size of its request, and never more
	// than the session's Limits.MaxHeldBytes. A batch is answered all at once, so what it pulls
	// is held until the end; this keeps a small request from making the server build a huge
	// answer. Over it, the answer is an abort message alone (docs/capnweb.md). Zero means 8 MiB
	// and 16; a negative BatchBase, no bound beyond MaxHeldBytes.
	BatchBase    int64
	BatchPerByte int
	// SessionOptions, when set, gives the options of the session serving r, whose main object
	// newMain returned (for example tighter limits and a pool of their own for a request without
	// credentials). A nil result means Session.
	SessionOptions func(r *http.Request, main any) *Options
	// BatchTimeout bounds how long a batch waits for its pulled results. Zero means 60 s. When it
	// passes, the response carries what has settled.
	BatchTimeout time.Duration
	// PingInterval: when nothing (no message, no pong) has come from a WebSocket peer for this
	// long, the handler pings it; a live peer answers at once (browsers, the npm clients and
	// this package's do, by themselves). A peer from which still nothing comes for another
	// PingInterval is gone, and its session ends. Zero: DefaultPingInterval (30 s). Negative:
	// no pings.
	PingInterval time.Duration
	// IdleTimeout ends a WebSocket session (with an abort saying why) when no message went
	// either way for this long while no call of the peer ran here: pings and pongs do not
	// count. A main object that implements KeepPolicy may choose another per session. Zero or
	// negative: none.
	IdleTimeout time.Duration
	// OnSession, when set, is called with each WebSocket session as it starts, for example to
	// keep s.Main(), the client's own main object, and call it later. It must not block.
	OnSession func(r *http.Request, s *Session)
	// ReadSpin is how long a WebSocket session's reader polls its socket for the peer's next
	// message before it sleeps waiting for it. It polls only while that pays: a poll that comes
	// up empty stops it until a message comes that soon again, and at most half the GOMAXPROCS
	// readers of the process poll at once, yielding between polls. A peer that sends again
	// within microseconds (nearby, or one that writes each message apart, as the npm client
	// does) is then read without the sleep and wake-up that cost both ends more than the
	// message. Zero means DefaultReadSpin; negative, never poll.
	ReadSpin time.Duration
}

// DefaultReadSpin is the ReadSpin of HandlerOptions left zero.
const DefaultReadSpin = 50 * time.Microsecond

func readSpin(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultReadSpin
	case d < 0:
		return 0
	}
	return d
}

// Handler serves capnweb over HTTP: a WebSocket upgrade starts a session for the connection's
// life; a POST is an HTTP batch. Any other request gets 405.
type Handler struct {
	newMain func(r *http.Request) (any, error)
	opts    HandlerOptions

	mu       sync.Mutex
	sessions map[*Session]struct{}
	closed   bool
	wg       sync.WaitGroup

	// readers runs the read loops of batch sessions. A batch's calls run there, and a fresh
	// goroutine for each batch grew its stack again each time (runtime.copystack).
	readers *gopool.Pool
}

// NewHandler returns a handler whose sessions offer the main object newMain returns for each
// request (for example one scoped to the request's credentials). An error from newMain is
// answered with 401 if it is ErrUnauthorized, else 500, before any session starts.
func NewHandler(newMain func(r *http.Request) (any, error), opts *HandlerOptions) *Handler {
	h := &Handler{newMain: newMain, sessions: map[*Session]struct{}{}, readers: gopool.New(workerIdle)}
	if opts != nil {
		h.opts = *opts
	}
	return h
}

// ErrUnauthorized may be returned by a Handler's newMain to refuse a request with 401.
var ErrUnauthorized = errors.New("capnweb: unauthorized")

func (h *Handler) track(s *Session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.sessions[s] = struct{}{}
	h.wg.Add(1)
	return true
}

func (h *Handler) untrack(s *Session) {
	h.mu.Lock()
	delete(h.sessions, s)
	h.mu.Unlock()
	h.wg.Done()
}

// Close ends every live session and waits for them. Register it with
// http.Server.RegisterOnShutdown: Shutdown does not close hijacked (WebSocket) connections.
// It is idempotent; requests after it get 503.
func (h *Handler) Close() error {
	h.mu.Lock()
	h.closed = true
	live := make([]*Session, 0, len(h.sessions))
	for s := range h.sessions {
		live = append(live, s)
	}
	h.mu.Unlock()
	for _, s := range live {
		s.shutdown(ErrSessionClosed, false)
	}
	h.wg.Wait()
	h.readers.Close()
	return nil
}

// Sessions returns the number of live sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	isWS := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	if r.Method != http.MethodPost && !isWS {
		w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
		w.WriteHeader(http.StatusMethodNotAllowed)
		io.WriteString(w, "This endpoint only accepts POST requests.")
		return
	}
	main, err := h.newMain(r)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrUnauthorized) {
			code = http.StatusUnauthorized
		}
		http.Error(w, http.StatusText(code), code)
		return
	}
	opts := &h.opts.Session
	if h.opts.SessionOptions != nil {
		if o := h.opts.SessionOptions(r, main); o != nil {
			opts = o
		}
	}
	if isWS {
		h.serveWebSocket(w, r, main, opts)
		return
	}
	h.serveBatch(w, r, main, opts)
}

func (h *Handler) serveWebSocket(w http.ResponseWriter, r *http.Request, main any, opts *Options) {
	c, err := ws.Accept(w, r, &ws.AcceptOptions{OriginPatterns: h.opts.OriginPatterns})
	if err != nil {
		return // Accept has answered the request
	}
	t := newWSTransport(c, opts.Limits.withDefaults().MaxMessageSize, h.opts.ReadSpin)
	s := newSession(t, main, opts, notBatch, false)
	if !h.track(s) {
		s.shutdown(ErrSessionClosed, false)
		s.serve()
		return
	}
	if h.opts.OnSession != nil {
		h.opts.OnSession(r, s)
	}
	stop := h.keep(r, s, t, main)
	// The read loop gets a goroutine of its own and the handler returns: net/http then drops
	// the request, the response and the deep stack of its connection goroutine, which an idle
	// session would otherwise keep for its whole life.
	s.serveAsync(func() { stop(); h.untrack(s) })
}

func (h *Handler) serveBatch(w http.ResponseWriter, r *http.Request, main any, opts *Options) {
	lim := opts.Limits.withDefaults()
	limit := h.opts.MaxBatchBytes
	if limit <= 0 {
		limit = int64(lim.MaxMessageSize)
	}
	limit = min(limit, heldLimit(&lim))
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("batch exceeds %d bytes", limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read request body", http.StatusBadRequest)
		return
	}
	var msgs [][]byte
	if len(body) > 0 {
		msgs = bytes.Split(body, []byte("\n"))
	}
	t := &batchServerTransport{in: msgs, allIn: make(chan struct{}), closed: make(chan struct{}),
		capHeld: func(held int64) int64 { return h.batchBudget(held, len(body)) }}
	s := newSession(t, main, opts, batchServer, false)
	if !h.track(s) {
		s.Close()
		http.Error(w, "server is shutting down", http.StatusServiceUnavailable)
		return
	}
	// The request is held whole until the batch ends.
	s.charge(int64(len(body)))
	defer h.untrack(s)
	s.wg.Add(1)
	h.readers.Go(s.readLoop)
	timeout := h.opts.BatchTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	select {
	case <-t.allIn:
		s.drain(ctx)
	case <-s.Done():
	case <-ctx.Done():
	}
	s.flush()
	failed := s.Err()
	s.Close()
	if isBudgetError(failed) {
		// The answer is what went over the budget: the abort message alone says why, in a body
		// the stock clients read (they read no body of an error status).
		enc := encoder{s: s}
		enc.b = append(enc.b, `["abort",`...)
		enc.errorValue(s.wireError(failed), 0)
		enc.b = append(enc.b, ']')
		w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
		w.Write(enc.b)
		return
	}
	if failed != nil && !errors.Is(failed, ErrSessionClosed) {
		w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, defaultWireError(failed).Message)
		return
	}
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	w.Write(t.response())
}

// batchBudget is the MaxHeldBytes of a batch of size request bytes, for a session whose
// MaxHeldBytes is held (see HandlerOptions.BatchBase).
func (h *Handler) batchBudget(held int64, size int) int64 {
	base, per := h.opts.BatchBase, int64(h.opts.BatchPerByte)
	switch {
	case base < 0:
		return held
	case base == 0:
		base = 8 << 20
	}
	if per <= 0 {
		per = 16
	}
	if int64(size) > (held-base)/per { // base + per*size > held, without overflow
		return held
	}
	return base + per*int64(size)
}

// drain waits until every pulled export has been answered and queued, or ctx ends.
func (s *Session) drain(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	for s.pulling > 0 && s.err == nil && ctx.Err() == nil {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

type batchServerTransport struct {
	// capHeld bounds the batch's MaxHeldBytes, given the session's (see batchBudget).
	capHeld func(held int64) int64

	mu     sync.Mutex
	in     [][]byte
	out    lines // the response
	allIn  chan struct{}
	once   sync.Once
	closed chan struct{}
	cOnce  sync.Once
}

func (t *batchServerTransport) Send(_ context.Context, msg []byte) error {
	t.sendNow(msg)
	return nil
}

// sendNow makes the transport a directSender.
func (t *batchServerTransport) sendNow(msg []byte) {
	t.mu.Lock()
	t.out.add(msg)
	t.mu.Unlock()
}

func (t *batchServerTransport) Receive(ctx context.Context) ([]byte, error) {
	t.mu.Lock()
	if len(t.in) > 0 {
		m := t.in[0]
		t.in = t.in[1:]
		t.mu.Unlock()
		return m, nil
	}
	t.mu.Unlock()
	t.once.Do(func() { close(t.allIn) })
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-t.closed:
		return nil, io.EOF
	}
}

// allReceived makes the transport a batchInput.
func (t *batchServerTransport) allReceived() <-chan struct{} { return t.allIn }

func (t *batchServerTransport) Close(error) error {
	t.cOnce.Do(func() { close(t.closed) })
	return nil
}

// response returns the sent messages joined by newlines.
func (t *batchServerTransport) response() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.b
}

// lines joins messages with newlines as they come, into a batch's body: there is no trailing
// newline (the JS client would read an empty message after one).
type lines struct {
	b []byte
	n int // messages added
}

func (l *lines) add(msg []byte) {
	if l.n > 0 {
		l.b = append(l.b, '\n')
	} else if l.b == nil {
		l.b = make([]byte, 0, 1024)
	}
	l.b = append(l.b, msg...)
	l.n++
}

// readAll reads r to its end, into a buffer allocated once when size (a Content-Length; -1 if
// unknown) is known, within limit and at most presizeMax: a peer's claim of a large body must
// not make us allocate before the bytes arrive.
func readAll(r io.Reader, size, limit int64) ([]byte, error) {
	if size < 0 || size > limit || size > presizeMax {
		return io.ReadAll(r)
	}
	var buf bytes.Buffer
	buf.Grow(int(size) + bytes.MinRead) // room to read EOF without growing
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// presizeMax bounds the buffer readAll allocates on a Content-Length's word.
const presizeMax = 1 << 20

// ---- WebSocket transport ----

type wsTransport struct {
	c    *ws.Conn
	max  atomic.Int64  // the session's MaxMessageSize (SetLimits may change it)
	msgs atomic.Uint64 // messages received and sent: what the keeper (keep.go) watches
}

// setMaxMessage makes the transport refuse messages over n bytes from the next one on.
func (t *wsTransport) setMaxMessage(n int) { t.max.Store(int64(n)) }

// wsIdleAfter is how long a WebSocket session waits for a message before its read loop parks
// or moves to a fresh goroutine (see errTransportIdle). Short, because a session that went quiet
// holds its read goroutine's stack until then, and a goroutine's freed stack only leaves the
// process's memory after a later GC (and the scavenger); a busy session rarely waits that long
// between messages, and parking costs two epoll_ctl calls and a goroutine. A variable for tests.
var wsIdleAfter = 100 * time.Millisecond

func newWSTransport(c *ws.Conn, maxMessage int, spin time.Duration) *wsTransport {
	c.IdleAfter = wsIdleAfter
	c.SpinWait = readSpin(spin)
	t := &wsTransport{c: c}
	t.setMaxMessage(maxMessage)
	return t
}

// Send and Receive ignore ctx: Close unblocks both.
func (t *wsTransport) Send(_ context.Context, msg []byte) error {
	t.msgs.Add(1)
	return t.c.WriteMessages(ws.Text, msg)
}

// SendBatch writes msgs with one write system call (see batchSender).
func (t *wsTransport) SendBatch(_ context.Context, msgs [][]byte) error {
	t.msgs.Add(1)
	return t.c.WriteMessages(ws.Text, msgs...)
}

// TrySendBatch makes the transport a tryBatchSender.
func (t *wsTransport) TrySendBatch(msgs [][]byte) (bool, error) {
	t.msgs.Add(1)
	return t.c.TryWriteMessages(ws.Text, msgs...)
}

// Buffered reports whether received bytes wait in the read buffer (see Session.buffered).
func (t *wsTransport) Buffered() bool { return t.c.Buffered() }

// WaitReadable makes the transport an idleWaiter.
func (t *wsTransport) WaitReadable() { t.c.WaitReadable() }

// Park makes the transport a parker.
func (t *wsTransport) Park(wake func()) bool { return t.c.Park(wake) }

func (t *wsTransport) Receive(context.Context) ([]byte, error) {
	// The limit is ours to enforce, so that the peer gets an abort saying why.
	max := int(t.max.Load())
	typ, msg, err := t.c.ReadMessage(max)
	var ce *ws.CloseError
	switch {
	case err == ws.ErrIdle:
		return nil, errTransportIdle
	case errors.Is(err, ws.ErrTooBig):
		return nil, typeErrorf("Incoming message exceeds maximum size of %d bytes.", max)
	case errors.As(err, &ce):
		return nil, fmt.Errorf("peer closed WebSocket: %d %s", ce.Code, ce.Reason)
	case err != nil:
		return nil, err
	case typ != ws.Text:
		return nil, typeErrorf("Received unexpected message type from WebSocket.")
	}
	t.msgs.Add(1)
	return msg, nil
}

func (t *wsTransport) Close(reason error) error {
	if reason == nil {
		return t.c.Close(ws.StatusNormal, "")
	}
	return t.c.Close(3000, reason.Error())
}

// DialOptions configure Dial. Nil means defaults.
type DialOptions struct {
	Session Options
	// Header is sent with the upgrade request (for example Authorization).
	Header http.Header
	// ReadSpin is as in HandlerOptions, for the client's session, except that zero means never
	// poll: a client often shares its cores with the server it calls, or serves in the same
	// process, and a polling client takes the CPU that server needs. On its own cores, calling
	// a nearby server that polls too, DefaultReadSpin makes sequential calls several times
	// faster (see docs/capnweb.md). The session polls only a socket it owns: one to a plain
	// ws:// URL, which Dial connects itself through HTTPClient's *http.Transport dialer when
	// that transport would not proxy it and the client keeps no cookies (over TLS, a proxy or
	// another RoundTripper, it never polls).
	ReadSpin time.Duration
	// HTTPClient makes the upgrade request, or posts the batch (NewBatchSession). Nil means
	// http.DefaultClient. A batch larger than its Transport's WriteBufferSize (4 KiB by
	// default, about 70 small calls) goes out in two writes, headers and body apart; a larger
	// WriteBufferSize sends it in one.
	HTTPClient *http.Client
}

// Dial opens a WebSocket session to url (ws:// or wss://). main is offered to the server, as
// in NewSession (nil for none). Close the session when done.
func Dial(ctx context.Context, url string, main any, opts *DialOptions) (*Session, error) {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	c, err := ws.Dial(ctx, url, &ws.DialOptions{Header: o.Header, HTTPClient: o.HTTPClient})
	if err != nil {
		return nil, fmt.Errorf("capnweb: dial %s: %w", url, err)
	}
	spin := o.ReadSpin
	if spin == 0 {
		spin = -1 // a client polls only when asked
	}
	return NewSession(newWSTransport(c, o.Session.Limits.withDefaults().MaxMessageSize, spin), main, &o.Session), nil
}

// ---- HTTP batch client ----

// NewBatchSession returns a session that sends its calls to url as one HTTP batch, posted when
// the first promise is awaited; calls made before then ride in the same request (and pipeline).
// The session ends with the response: later calls fail. Callbacks passed to the server can be
// called by it within the batch, but their results never reach it. The request carries what
// the server may wait for: the resolutions of promises passed in it (ErrBatchPending for one
// still pending), and the content of ReadableStreams, read to their end as it is sent; a
// WritableStream cannot be passed. opts may be nil.
func NewBatchSession(url string, main any, opts *DialOptions) *Session {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	client := o.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	t := &batchClientTransport{url: url, header: o.Header, client: client, ready: make(chan struct{}), closed: make(chan struct{})}
	s := newSession(t, main, &o.Session, batchClient, false)
	t.s = s
	s.wg.Add(1)
	batchWorkers.Go(s.readLoop)
	return s
}

// batchWorkers runs the read loops and the HTTP requests of batch client sessions, each of
// which lives for one request: on fresh goroutines, net/http's deep call chain grew a new
// stack every time (runtime.copystack was 8% of a batch client's CPU). Idle workers end after
// workerIdle.
var batchWorkers = gopool.New(workerIdle)

type batchClientTransport struct {
	url    string
	header http.Header
	client *http.Client
	s      *Session

	flush batchFlush // the session's, under its mu (batchflush.go)

	mu     sync.Mutex
	out    lines // the request
	sent   bool
	ready  chan struct{} // closed when the response (or failure) is in
	in     [][]byte
	err    error
	closed chan struct{}
	cOnce  sync.Once
}

func (t *batchClientTransport) Send(_ context.Context, msg []byte) error {
	t.sendNow(msg)
	return nil
}

// sendNow makes the transport a directSender.
func (t *batchClientTransport) sendNow(msg []byte) {
	t.mu.Lock()
	if !t.sent { // else the batch has gone; the JS client drops these too
		t.out.add(msg)
	}
	t.mu.Unlock()
}

func (t *batchClientTransport) flushBatch() {
	t.mu.Lock()
	if t.sent {
		t.mu.Unlock()
		return
	}
	t.sent = true
	body := t.out.b
	t.out = lines{}
	t.mu.Unlock()
	batchWorkers.Go(func() { t.post(body) })
}

func (t *batchClientTransport) flushed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent
}

var errBatchEnded = errors.New("Batch RPC request ended.")

func (t *batchClientTransport) post(body []byte) {
	var in [][]byte
	err := func() error {
		req, err := http.NewRequestWithContext(t.s.ctx, http.MethodPost, t.url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		for k, v := range t.header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
		resp, err := t.client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("RPC request failed: %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		}
		limit := int64(t.s.lim().MaxMessageSize) + 1
		data, err := readAll(io.LimitReader(resp.Body, limit), resp.ContentLength, limit)
		if err != nil {
			return err
		}
		if len(data) > 0 {
			in = bytes.Split(data, []byte("\n"))
		}
		return nil
	}()
	t.mu.Lock()
	t.in, t.err = in, err
	t.mu.Unlock()
	close(t.ready)
}

func (t *batchClientTransport) Receive(ctx context.Context) ([]byte, error) {
	t.mu.Lock()
	in := t.in
	t.mu.Unlock()
	if in == nil { // not yet read (or nothing came): wait
		select {
		case <-t.ready:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-t.closed:
			return nil, io.EOF
		}
	} else {
		select {
		case <-t.closed:
			return nil, io.EOF
		default:
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.in) > 0 {
		m := t.in[0]
		t.in = t.in[1:]
		return m, nil
	}
	if t.err != nil {
		return nil, t.err
	}
	return nil, errBatchEnded
}

func (t *batchClientTransport) Close(error) error {
	t.cOnce.Do(func() { close(t.closed) })
	return nil
}
