package capnweb_test

// Golden tests: the wire transcripts captured from the official JavaScript library
// (capnweb@0.12.0, see testdata/golden/GOLDEN.md) are replayed against our server, which must
// answer as the JavaScript server did, up to the differences listed in goldenAllowances.
//
//   - ws-*.jsonl: the client's frames are sent in order to a Session over Pipe (and, in a
//     second test, over a real WebSocket to a Handler). A client frame is sent only once every
//     server frame the transcript shows before it has arrived: the JavaScript client sent it
//     after seeing those (a callback's resolve answers the server's push and pull).
//   - batch-*.jsonl: the request body is posted to a Handler; the response lines must match.
//
// Frames are compared as JSON values: object key order and number spelling do not matter.
// Server frames may arrive in a different order than in the transcript as long as the frames
// that allocate IDs (push, stream, pipe) and pulls keep their relative order; settling frames
// (resolve, reject, release) name their IDs and may come in any order.
//
// go test -run Golden -update rewrites testdata/golden/go-*.jsonl with what our server sent,
// in the transcripts' format, for reviewers to diff against the JavaScript ones. The
// assertions always compare against the JavaScript transcripts.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden/go-*.jsonl with what our server sends")

const (
	goldenDir = "testdata/golden"
	// frameTimeout bounds the wait for one expected server frame (generous: -race is slow).
	frameTimeout = 10 * time.Second
	// settleTime is how long to watch for unexpected extra frames at the end of a transcript.
	settleTime = 100 * time.Millisecond
)

// goldenAllowance lists where our server legitimately differs from the JavaScript one in a
// transcript.
type goldenAllowance struct {
	// inlineMapResults: the JS server answers a .map() with ["promise", -N] placeholders and
	// sends ["resolve", -N, v] for each later; ours resolves the map with the values
	// themselves. An expected ["promise", -N] then matches the v of the transcript's
	// ["resolve", -N, v]; that resolve is no longer expected, and the client's
	// ["release", -N, n] is not sent (we have no export -N).
	inlineMapResults bool
	// optionalKinds are kinds of server frames ours may not send. "pull": ours does not pull
	// a callback's result that the method does not await.
	optionalKinds []string
	// extraKinds are kinds of server frames ours may send although the JS server did not.
	// "release": ours releases a callback, and the result of a call it made on it, as soon as
	// the method drops them; the JS server holds them until the session ends.
	extraKinds []string
	// errorMessages: in reject frames only the error's type (name) must match; the message
	// wording may differ (e.g. for a missing method).
	errorMessages bool
	// anyAbortType: the abort's error type may differ too. A binary frame: the JS server feeds
	// "[object ArrayBuffer]" to JSON.parse (SyntaxError); ours says what is wrong (TypeError).
	anyAbortType bool
}

// Abort frames always compare by error type only: the message wording is ours.
var goldenAllowances = map[string]goldenAllowance{
	"ws-map":              {inlineMapResults: true},
	"ws-raw-remap":        {inlineMapResults: true},
	"batch-map":           {inlineMapResults: true},
	"batch-callback":      {optionalKinds: []string{"pull"}, extraKinds: []string{"release"}}, // pokeCallback does not await
	"ws-error":            {errorMessages: true},                                              // "'noSuchMethod' is not a function."
	"ws-raw-get-proto":    {errorMessages: true},                                              // "'constructor' is not a function."
	"ws-raw-binary-frame": {anyAbortType: true},
}

// ---- transcripts ----

type goldenEntry struct {
	Dir  string `json:"dir"`
	Data string `json:"data"`
	Raw  bool   `json:"raw,omitempty"`
}

// goldenFiles returns the JavaScript transcripts matching pattern (never our go-* ones).
func goldenFiles(t testing.TB, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), "go-") })
	if len(files) == 0 {
		t.Fatalf("no golden transcripts match %s in %s", pattern, goldenDir)
	}
	return files
}

func loadGolden(t testing.TB, file string) []goldenEntry {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenEntry
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		var e goldenEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s:%d: %v", file, i+1, err)
		}
		out = append(out, e)
	}
	return out
}

func transcriptName(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".jsonl")
}

// writeGolden writes our own transcript (for -update).
func writeGolden(t testing.TB, name string, entries []goldenEntry) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(goldenDir, "go-"+name+".jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ---- JSON frames ----

func parseFrame(s string) (any, error) {
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after frame %q", s)
	}
	return v, nil
}

func frameKind(v any) string {
	if a, ok := v.([]any); ok && len(a) > 0 {
		s, _ := a[0].(string)
		return s
	}
	return ""
}

// frameID returns the ID a frame names (resolve, reject, release, pull), if any.
func frameID(v any) (float64, bool) {
	if a, ok := v.([]any); ok && len(a) > 1 {
		switch frameKind(v) {
		case "resolve", "reject", "release", "pull":
			f, ok := a[1].(float64)
			return f, ok
		}
	}
	return 0, false
}

func isSettleFrame(v any) bool {
	switch frameKind(v) {
	case "resolve", "reject", "release":
		return true
	}
	return false
}

// errorName returns the name of the error in an abort or reject frame.
func errorName(v any) (string, string, bool) {
	a, _ := v.([]any)
	var e []any
	switch {
	case frameKind(v) == "abort" && len(a) == 2:
		e, _ = a[1].([]any)
	case frameKind(v) == "reject" && len(a) == 3:
		e, _ = a[2].([]any)
	}
	if len(e) < 3 || e[0] != "error" {
		return "", "", false
	}
	name, _ := e[1].(string)
	msg, _ := e[2].(string)
	return name, msg, true
}

func mustJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

// matcher compares expected (JavaScript) frames with ours under a transcript's allowances.
type matcher struct {
	allow goldenAllowance
	// resolutions holds, for inlineMapResults, the values of the transcript's
	// ["resolve", -N, v] frames, and inlined the IDs whose value ours sent in place.
	resolutions map[float64]any
	inlined     map[float64]bool
}

func newMatcher(name string, entries []goldenEntry) *matcher {
	m := &matcher{allow: goldenAllowances[name], resolutions: map[float64]any{}, inlined: map[float64]bool{}}
	if m.allow.inlineMapResults {
		for _, e := range entries {
			if e.Dir != "s2c" || e.Raw {
				continue
			}
			v, err := parseFrame(e.Data)
			if err != nil || frameKind(v) != "resolve" {
				continue
			}
			if id, ok := frameID(v); ok && id < 0 {
				m.resolutions[id] = v.([]any)[2]
			}
		}
	}
	return m
}

func (m *matcher) optional(exp any) bool {
	return slices.Contains(m.allow.optionalKinds, frameKind(exp))
}

func (m *matcher) extra(got any) bool {
	return slices.Contains(m.allow.extraKinds, frameKind(got))
}

// skipExpected reports whether an expected server frame is not expected from us: the resolve of
// a map result ours sent inline.
func (m *matcher) skipExpected(exp any) bool {
	id, ok := frameID(exp)
	return ok && frameKind(exp) == "resolve" && m.inlined[id]
}

// skipClient reports whether a client frame is not to be sent: the release of a map result ours
// sent inline.
func (m *matcher) skipClient(frame any) bool {
	id, ok := frameID(frame)
	return ok && frameKind(frame) == "release" && m.inlined[id]
}

// match reports whether got matches the expected frame exp, recording inlined map results.
func (m *matcher) match(exp, got any) bool {
	if frameKind(exp) == "abort" || (m.allow.errorMessages && frameKind(exp) == "reject") {
		en, _, ok1 := errorName(exp)
		gn, _, ok2 := errorName(got)
		if !ok1 || !ok2 || frameKind(exp) != frameKind(got) {
			return false
		}
		if en != gn && !(m.allow.anyAbortType && frameKind(exp) == "abort") {
			return false
		}
		if frameKind(exp) == "reject" {
			eid, _ := frameID(exp)
			gid, _ := frameID(got)
			return eid == gid
		}
		return true
	}
	inl := map[float64]bool{}
	if !m.equal(exp, got, inl) {
		return false
	}
	for id := range inl {
		m.inlined[id] = true
	}
	return true
}

func (m *matcher) equal(exp, got any, inl map[float64]bool) bool {
	if m.allow.inlineMapResults {
		if a, ok := exp.([]any); ok && len(a) == 2 && a[0] == "promise" {
			if id, ok := a[1].(float64); ok {
				if v, ok := m.resolutions[id]; ok && m.equal(v, got, inl) {
					inl[id] = true
					return true
				}
			}
		}
	}
	switch e := exp.(type) {
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(e) {
			return false
		}
		for i := range e {
			if !m.equal(e[i], g[i], inl) {
				return false
			}
		}
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(e) {
			return false
		}
		for k, ev := range e {
			gv, ok := g[k]
			if !ok || !m.equal(ev, gv, inl) {
				return false
			}
		}
		return true
	}
	return cmp.Equal(exp, got)
}

// ---- wires: the client side of a replay ----

// wireFrame is a message from the server, or (closed) the end of the connection.
type wireFrame struct {
	data   []byte
	binary bool
	closed bool
	code   int // WebSocket close code; 0 over a Pipe
	reason string
}

type wire interface {
	send(ctx context.Context, data []byte, binary bool) error
	// frames yields the server's messages, then one closed frame, then is closed.
	frames() <-chan wireFrame
	// close ends the connection from the client side.
	close(code int, reason string)
}

// pipeWire drives the raw end of a Pipe.
type pipeWire struct {
	t  capnweb.Transport
	ch chan wireFrame
}

func newPipeWire(ctx context.Context, t capnweb.Transport) *pipeWire {
	w := &pipeWire{t: t, ch: make(chan wireFrame, 1024)}
	go func() {
		defer close(w.ch)
		for {
			m, err := t.Receive(ctx)
			if err != nil {
				w.ch <- wireFrame{closed: true, reason: err.Error()}
				return
			}
			w.ch <- wireFrame{data: m}
		}
	}()
	return w
}

func (w *pipeWire) send(ctx context.Context, data []byte, binary bool) error {
	return w.t.Send(ctx, data)
}

func (w *pipeWire) frames() <-chan wireFrame { return w.ch }

func (w *pipeWire) close(code int, reason string) {
	if code == 1000 {
		w.t.Close(nil)
		return
	}
	w.t.Close(errors.New(reason))
}

// wsWire is a minimal RFC 6455 client, standard library only: enough to send text and binary
// frames, and to see the server's close code.
type wsWire struct {
	conn net.Conn
	br   *bufio.Reader
	wmu  sync.Mutex
	ch   chan wireFrame
}

func dialWire(ctx context.Context, serverURL string) (*wsWire, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 16)
	rand.Read(key)
	k := base64.StdEncoding.EncodeToString(key)
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", u.Host, k)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	sum := sha1.Sum([]byte(k + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		conn.Close()
		return nil, fmt.Errorf("WebSocket upgrade refused: %s", resp.Status)
	}
	w := &wsWire{conn: conn, br: br, ch: make(chan wireFrame, 1024)}
	go w.readLoop()
	return w, nil
}

func (w *wsWire) writeFrame(op byte, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	hdr := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n < 1<<16:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	mask := make([]byte, 4)
	rand.Read(mask)
	hdr = append(hdr, mask...)
	masked := make([]byte, len(payload))
	for i, b := range payload {
		masked[i] = b ^ mask[i%4]
	}
	w.conn.SetWriteDeadline(time.Now().Add(frameTimeout))
	_, err := w.conn.Write(append(hdr, masked...))
	return err
}

func (w *wsWire) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(w.br, h[:]); err != nil {
		return
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err = io.ReadFull(w.br, b[:]); err != nil {
			return
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err = io.ReadFull(w.br, b[:]); err != nil {
			return
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	var mask [4]byte
	if h[1]&0x80 != 0 {
		if _, err = io.ReadFull(w.br, mask[:]); err != nil {
			return
		}
	}
	if n > 64<<20 {
		err = fmt.Errorf("frame of %d bytes", n)
		return
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(w.br, payload); err != nil {
		return
	}
	if h[1]&0x80 != 0 {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return
}

func (w *wsWire) readLoop() {
	defer close(w.ch)
	defer w.conn.Close()
	var msg []byte
	var msgOp byte
	for {
		fin, op, payload, err := w.readFrame()
		if err != nil {
			w.ch <- wireFrame{closed: true, code: 1006, reason: err.Error()}
			return
		}
		switch op {
		case 0x8: // close: echo it, report it
			code := 1005
			reason := ""
			if len(payload) >= 2 {
				code = int(binary.BigEndian.Uint16(payload))
				reason = string(payload[2:])
			}
			w.writeFrame(0x8, payload)
			w.ch <- wireFrame{closed: true, code: code, reason: reason}
			return
		case 0x9: // ping
			w.writeFrame(0xA, payload)
		case 0xA:
		case 0x0:
			msg = append(msg, payload...)
		default:
			msg, msgOp = append([]byte(nil), payload...), op
		}
		if fin && (op == 0x0 || op == 0x1 || op == 0x2) {
			w.ch <- wireFrame{data: msg, binary: msgOp == 0x2}
			msg = nil
		}
	}
}

func (w *wsWire) send(ctx context.Context, data []byte, bin bool) error {
	op := byte(0x1)
	if bin {
		op = 0x2
	}
	return w.writeFrame(op, data)
}

func (w *wsWire) frames() <-chan wireFrame { return w.ch }

func (w *wsWire) close(code int, reason string) {
	p := binary.BigEndian.AppendUint16(nil, uint16(code))
	w.writeFrame(0x8, append(p, reason...))
	// The server answers with its close frame; the read loop then closes the connection.
	go func() {
		time.Sleep(frameTimeout)
		w.conn.Close()
	}()
}

// ---- replaying a WebSocket transcript ----

type received struct {
	raw     string
	v       any
	matched bool
}

type expectation struct {
	raw string
	v   any
}

// replay runs one ws-*.jsonl transcript against the server at the other end of w.
type replay struct {
	t       *testing.T
	name    string
	entries []goldenEntry
	m       *matcher
	w       wire

	got     []*received
	pending []expectation // expected server frames not matched yet, in transcript order
	closed  *wireFrame    // how the server ended the connection, once it has
	abort   any           // the abort frame ours sent, if any
	ours    []goldenEntry // what happened, for -update
	failed  bool
}

func newReplay(t *testing.T, file string, w wire) *replay {
	name := transcriptName(file)
	entries := loadGolden(t, file)
	return &replay{t: t, name: name, entries: entries, m: newMatcher(name, entries), w: w}
}

// expectsAbort reports whether the JavaScript server aborted the session in this transcript.
func (r *replay) expectsAbort() bool {
	for _, e := range r.entries {
		if e.Dir == "s2c" && strings.HasPrefix(e.Data, `["abort"`) {
			return true
		}
	}
	return false
}

// clientAborts reports whether the client aborted the session in this transcript.
func (r *replay) clientAborts() bool {
	for _, e := range r.entries {
		if e.Dir == "c2s" && strings.HasPrefix(e.Data, `["abort"`) {
			return true
		}
	}
	return false
}

// take reads one more frame from the wire, waiting until the deadline.
func (r *replay) take(deadline time.Time) bool {
	if r.closed != nil {
		return false
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case f, ok := <-r.w.frames():
		if !ok {
			r.closed = &wireFrame{closed: true, code: 1006}
			return false
		}
		if f.closed {
			r.closed = &f
			if f.code != 0 {
				r.ours = append(r.ours, goldenEntry{Dir: "closed", Data: fmt.Sprintf("code=%d reason=%q", f.code, f.reason)})
			}
			return false
		}
		data := string(f.data)
		if f.binary {
			data = "<binary> " + data
		}
		r.ours = append(r.ours, goldenEntry{Dir: "s2c", Data: data})
		v, err := parseFrame(string(f.data))
		if err != nil {
			r.t.Errorf("%s: server sent a frame that is not JSON: %q: %v", r.name, f.data, err)
			r.failed = true
			v = nil
		}
		if frameKind(v) == "abort" && r.abort == nil {
			r.abort = v
		}
		r.got = append(r.got, &received{raw: data, v: v})
		return true
	case <-timer.C:
		return false
	}
}

// find returns the index of the first unmatched received frame matching exp, or -1.
func (r *replay) find(exp any) int {
	for i, g := range r.got {
		if !g.matched && r.m.match(exp, g.v) {
			return i
		}
	}
	return -1
}

func (r *replay) receivedSoFar() string {
	var b strings.Builder
	for _, g := range r.got {
		mark := " "
		if g.matched {
			mark = "✓"
		}
		fmt.Fprintf(&b, "\n\t%s %s", mark, g.raw)
	}
	if r.closed != nil {
		fmt.Fprintf(&b, "\n\t(connection closed: code=%d %s)", r.closed.code, r.closed.reason)
	}
	return b.String()
}

// satisfy matches the pending expectations against what the server sends, waiting for each
// required one. Optional ones still missing stay pending.
func (r *replay) satisfy() bool {
	var still []expectation
	for _, e := range r.pending {
		if r.m.skipExpected(e.v) {
			continue
		}
		i := r.find(e.v)
		for i < 0 && !r.m.optional(e.v) && r.take(time.Now().Add(frameTimeout)) {
			i = r.find(e.v)
		}
		if i < 0 {
			if r.m.optional(e.v) {
				still = append(still, e)
				continue
			}
			r.t.Errorf("%s: server frame %s (from the JS transcript) did not arrive; received:%s", r.name, e.raw, r.receivedSoFar())
			r.failed = true
			return false
		}
		// Frames that allocate or pull IDs keep their relative order.
		if !isSettleFrame(e.v) {
			for _, g := range r.got[:i] {
				if !g.matched && !isSettleFrame(g.v) {
					r.t.Errorf("%s: server frame %s arrived before %s; received:%s", r.name, g.raw, e.raw, r.receivedSoFar())
					r.failed = true
					return false
				}
			}
		}
		r.got[i].matched = true
		if frameKind(e.v) == "abort" {
			en, em, _ := errorName(e.v)
			gn, gm, _ := errorName(r.got[i].v)
			if em != gm {
				r.t.Logf("%s: abort message differs (allowed): JS %s: %q, ours %s: %q", r.name, en, em, gn, gm)
			}
		}
	}
	r.pending = still
	return true
}

// run replays the transcript; it returns false when it had to stop early.
func (r *replay) run(ctx context.Context) bool {
	stopped := false // ours has aborted: the client's remaining frames are moot
	for _, e := range r.entries {
		switch e.Dir {
		case "s2c":
			v, err := parseFrame(e.Data)
			if err != nil {
				r.t.Fatalf("%s: bad transcript frame %q: %v", r.name, e.Data, err)
			}
			r.pending = append(r.pending, expectation{raw: e.Data, v: v})
		case "c2s":
			if stopped {
				continue
			}
			// Causality: the JS client sent this after seeing every earlier server frame.
			if !r.satisfy() {
				return false
			}
			binary := strings.HasPrefix(e.Data, "<binary")
			data := []byte(e.Data)
			if binary {
				// The probe sent a binary frame holding a message (the transcript does not keep
				// its bytes).
				data = []byte(`["push",["pipeline",0,["add"],[1,2]]]`)
			} else {
				v, err := parseFrame(e.Data)
				if err != nil {
					r.t.Fatalf("%s: bad transcript frame %q: %v", r.name, e.Data, err)
				}
				if r.m.skipClient(v) {
					continue
				}
			}
			if r.abort != nil {
				// The JS client sent the rest before the JS server's abort reached it. Were our
				// abort premature, the server frames still expected will be missing.
				r.t.Logf("%s: server aborted before the client sent %s: %s", r.name, e.Data, mustJSON(r.abort))
				stopped = true
				continue
			}
			entry := goldenEntry{Dir: "c2s", Data: string(data)}
			if binary {
				entry.Data = "<binary> " + entry.Data
			}
			r.ours = append(r.ours, entry)
			if err := r.w.send(ctx, data, binary); err != nil {
				// The server may have aborted and closed the connection in the meantime.
				for r.take(time.Now().Add(frameTimeout)) {
				}
				if r.abort == nil {
					r.t.Errorf("%s: sending %s: %v", r.name, e.Data, err)
					r.failed = true
					return false
				}
				r.t.Logf("%s: sending %s after the server aborted: %v", r.name, e.Data, err)
				stopped = true
			}
		}
	}
	if !r.satisfy() {
		return false
	}
	// Optional frames may still come; anything else is unexpected.
	deadline := time.Now().Add(settleTime)
	for r.take(deadline) {
	}
	var still []expectation
	for _, e := range r.pending {
		if i := r.find(e.v); i >= 0 {
			r.got[i].matched = true
			continue
		}
		still = append(still, e)
	}
	r.pending = still
	for _, g := range r.got {
		if !g.matched && r.m.extra(g.v) {
			r.t.Logf("%s: extra server frame (allowed): %s", r.name, g.raw)
			continue
		}
		if !g.matched {
			r.t.Errorf("%s: unexpected server frame %s; received:%s", r.name, g.raw, r.receivedSoFar())
			r.failed = true
		}
	}
	return !r.failed
}

// waitClosed waits for the server to end the connection.
func (r *replay) waitClosed() *wireFrame {
	deadline := time.Now().Add(frameTimeout)
	for r.closed == nil && time.Now().Before(deadline) {
		if r.take(deadline) {
			g := r.got[len(r.got)-1]
			r.t.Errorf("%s: frame after the end of the transcript: %s", r.name, g.raw)
		}
	}
	return r.closed
}

// expectedTables computes, from the JS transcript, the sizes the server's tables have at its
// end: what was exported or imported, minus what was released. Results ours sent inline are not
// counted.
func expectedTables(entries []goldenEntry, m *matcher) capnweb.Stats {
	exports := map[float64]bool{0: true}
	imports := map[float64]bool{0: true}
	clientStreams := map[float64]bool{} // the client's "stream" pushes: released on settle
	serverStreams := map[float64]bool{}
	nextPush, nextImport := 1.0, 1.0
	var refs func(v any, tags []string, f func(id float64))
	refs = func(v any, tags []string, f func(id float64)) {
		switch x := v.(type) {
		case []any:
			if len(x) == 2 {
				if tag, ok := x[0].(string); ok && slices.Contains(tags, tag) {
					if id, ok := x[1].(float64); ok {
						f(id)
						return
					}
				}
			}
			for _, e := range x {
				refs(e, tags, f)
			}
		case map[string]any:
			for _, e := range x {
				refs(e, tags, f)
			}
		}
	}
	for _, e := range entries {
		if e.Raw || (e.Dir != "c2s" && e.Dir != "s2c") || strings.HasPrefix(e.Data, "<binary") {
			continue
		}
		v, err := parseFrame(e.Data)
		if err != nil {
			continue
		}
		a, _ := v.([]any)
		id, _ := frameID(v)
		kind := frameKind(v)
		if e.Dir == "c2s" {
			switch kind {
			case "push", "stream", "pipe":
				exports[nextPush] = true
				if kind == "stream" {
					clientStreams[nextPush] = true
				}
				nextPush++
			case "release":
				if !m.inlined[id] {
					delete(exports, id)
				}
			case "resolve", "reject":
				if serverStreams[id] {
					delete(imports, id)
				}
			}
			if kind != "release" {
				refs(v, []string{"export", "promise", "writable"}, func(id float64) { imports[id] = true })
			}
			continue
		}
		switch kind {
		case "push", "stream", "pipe":
			imports[nextImport] = true
			if kind == "stream" {
				serverStreams[nextImport] = true
			}
			nextImport++
		case "release":
			delete(imports, id)
		case "resolve", "reject":
			if m.inlined[id] {
				continue
			}
			if clientStreams[id] {
				delete(exports, id)
			}
		}
		if len(a) > 0 && kind != "release" {
			refs(v, []string{"export", "promise", "writable"}, func(id float64) {
				if !m.inlined[id] {
					exports[id] = true
				}
			})
		}
	}
	return capnweb.Stats{Imports: len(imports), Exports: len(exports)}
}

func goldenWaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGoldenPipe replays every ws-*.jsonl transcript into a Session over Pipe.
func TestGoldenPipe(t *testing.T) {
	t.Parallel()
	for _, file := range goldenFiles(t, "ws-*.jsonl") {
		t.Run(transcriptName(file), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			client, server := capnweb.Pipe()
			api := &capnwebtest.API{}
			s := capnweb.NewSession(server, api, nil)
			t.Cleanup(func() {
				s.Close()
				api.Wait()
			})
			r := newReplay(t, file, newPipeWire(ctx, client))
			for _, e := range r.entries {
				if e.Dir == "c2s" && strings.HasPrefix(e.Data, "<binary") {
					t.Skip("a Pipe carries no frame types; TestGoldenWebSocket replays this one")
				}
			}
			if !r.run(ctx) {
				return
			}
			switch {
			case r.expectsAbort():
				// The last frame is the abort; the session must be over, its tables empty.
				if r.abort == nil {
					t.Fatalf("%s: no abort frame", r.name)
				}
				select {
				case <-s.Done():
				case <-time.After(frameTimeout):
					t.Fatalf("%s: Session.Done() not closed after the abort", r.name)
				}
				_, msg, _ := errorName(r.abort)
				if err := s.Err(); err == nil || errors.Is(err, capnweb.ErrSessionClosed) || err.Error() != msg {
					t.Errorf("%s: Session.Err() = %v, want the abort's error %q", r.name, err, msg)
				}
				if got, want := s.Stats(), (capnweb.Stats{}); got != want {
					t.Errorf("%s: Session.Stats() after abort = %+v, want %+v", r.name, got, want)
				}
				if c := r.waitClosed(); c == nil {
					t.Errorf("%s: transport not closed after the abort", r.name)
				}
			case r.clientAborts():
				select {
				case <-s.Done():
				case <-time.After(frameTimeout):
					t.Fatalf("%s: Session.Done() not closed after the client's abort", r.name)
				}
				var ce *capnweb.Error
				if err := s.Err(); !errors.As(err, &ce) || ce.Name != "Error" || ce.Message != "client going away" {
					t.Errorf("%s: Session.Err() = %#v, want the client's *Error %q", r.name, s.Err(), "client going away")
				}
			default:
				want := expectedTables(r.entries, r.m)
				var got capnweb.Stats
				if !goldenWaitFor(2*time.Second, func() bool { got = s.Stats(); return got == want }) {
					t.Errorf("%s: Session.Stats() at the end of the transcript = %+v, want %+v (as the JS server's table)", r.name, got, want)
				}
				if err := s.Err(); err != nil {
					t.Errorf("%s: Session.Err() = %v, want nil while the client is connected", r.name, err)
				}
				// The client goes away: the session ends.
				r.w.close(3000, "RPC session was shut down by disposing the main stub")
				select {
				case <-s.Done():
				case <-time.After(frameTimeout):
					t.Fatalf("%s: Session.Done() not closed after the client closed the transport", r.name)
				}
			}
		})
	}
}

// TestGoldenWebSocket replays every ws-*.jsonl transcript over a real WebSocket to a Handler.
// After a protocol violation, a fresh session on the same handler must still work.
func TestGoldenWebSocket(t *testing.T) {
	t.Parallel()
	for _, file := range goldenFiles(t, "ws-*.jsonl") {
		t.Run(transcriptName(file), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			var apis []*capnwebtest.API
			var mu sync.Mutex
			h := capnweb.NewHandler(func(*http.Request) (any, error) {
				api := &capnwebtest.API{}
				mu.Lock()
				apis = append(apis, api)
				mu.Unlock()
				return api, nil
			}, nil)
			srv := httptest.NewServer(h)
			t.Cleanup(func() {
				h.Close()
				srv.Close()
				mu.Lock()
				defer mu.Unlock()
				for _, a := range apis {
					a.Wait()
				}
			})
			w, err := dialWire(ctx, srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			r := newReplay(t, file, w)
			ok := r.run(ctx)
			if *updateGolden {
				t.Cleanup(func() { writeGolden(t, r.name, r.ours) })
			}
			if !ok {
				return
			}
			if r.expectsAbort() || r.clientAborts() {
				c := r.waitClosed()
				if c == nil || c.code != 3000 {
					t.Errorf("%s: close = %+v, want code 3000 (as the JS server)", r.name, c)
				}
				// A fresh session on the same handler still works.
				fresh, err := dialWire(ctx, srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				fr := &replay{t: t, name: r.name + " (fresh session)", w: fresh, m: newMatcher("", nil),
					entries: loadGolden(t, filepath.Join(goldenDir, "ws-raw-simple.jsonl"))}
				if fr.run(ctx) {
					fresh.close(1000, "probe done")
					fr.waitClosed()
				}
			} else {
				w.close(3000, "RPC session was shut down by disposing the main stub")
				if c := r.waitClosed(); c == nil {
					t.Errorf("%s: server did not close the connection", r.name)
				}
			}
			if !goldenWaitFor(frameTimeout, func() bool { return h.Sessions() == 0 }) {
				t.Errorf("%s: Handler.Sessions() = %d after every client left, want 0", r.name, h.Sessions())
			}
		})
	}
}

// ---- HTTP batch ----

var (
	httpRequestLine = regexp.MustCompile(`^(\w+) (\S+) content-type=(.*)$`)
	httpStatusLine  = regexp.MustCompile(`^status=(\d+) headers=(.*)$`)
)

// TestGoldenBatch posts each batch-*.jsonl request body to a Handler and compares the response
// with the JS server's, line by line.
func TestGoldenBatch(t *testing.T) {
	t.Parallel()
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	for _, file := range goldenFiles(t, "batch-*.jsonl") {
		t.Run(transcriptName(file), func(t *testing.T) {
			t.Parallel()
			name := transcriptName(file)
			entries := loadGolden(t, file)
			m := newMatcher(name, entries)
			var method, target, ctype, reqBody, respBody string
			wantStatus, rejected := 0, false
			var wantHeaders [][]string
			var rawSeen [2]bool
			for _, e := range entries {
				switch e.Dir {
				case "http":
					if sm := httpRequestLine.FindStringSubmatch(e.Data); sm != nil && method == "" {
						method, target, ctype = sm[1], sm[2], sm[3]
					} else if sm := httpStatusLine.FindStringSubmatch(e.Data); sm != nil {
						wantStatus, _ = strconv.Atoi(sm[1])
						if err := json.Unmarshal([]byte(sm[2]), &wantHeaders); err != nil {
							t.Fatalf("bad headers in %q: %v", e.Data, err)
						}
					} else if strings.Contains(e.Data, "rejected") {
						rejected = true
					}
				case "c2s", "s2c":
					i := 0
					if e.Dir == "s2c" {
						i = 1
					}
					if e.Raw && !rawSeen[i] {
						rawSeen[i] = true
						var body string
						if err := json.Unmarshal([]byte(e.Data), &body); err != nil {
							t.Fatalf("bad raw body %q: %v", e.Data, err)
						}
						if i == 0 {
							reqBody = body
						} else {
							respBody = body
						}
					}
				}
			}
			req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+target, strings.NewReader(reqBody))
			if err != nil {
				t.Fatal(err)
			}
			if ctype != "(none)" {
				req.Header.Set("Content-Type", ctype)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if *updateGolden {
				ours := []goldenEntry{
					{Dir: "http", Data: fmt.Sprintf("%s %s content-type=%s", method, target, ctype)},
					{Dir: "c2s", Data: mustJSON(reqBody), Raw: true},
				}
				if reqBody != "" {
					for _, l := range strings.Split(reqBody, "\n") {
						ours = append(ours, goldenEntry{Dir: "c2s", Data: l})
					}
				}
				ours = append(ours,
					goldenEntry{Dir: "http", Data: fmt.Sprintf("status=%d headers=%s", resp.StatusCode, mustJSON([][]string{{"content-type", resp.Header.Get("Content-Type")}}))},
					goldenEntry{Dir: "s2c", Data: mustJSON(string(body)), Raw: true})
				if len(body) > 0 {
					for _, l := range strings.Split(string(body), "\n") {
						ours = append(ours, goldenEntry{Dir: "s2c", Data: l})
					}
				}
				writeGolden(t, name, ours)
			}

			if rejected {
				// The JS server rejects a body with a trailing newline (an empty last message):
				// its fetch handler answers 500, its Node handler drops the connection. Ours must
				// refuse it too; it answers 400 with the reason.
				if resp.StatusCode < 400 {
					t.Errorf("POST %q: status %d, want an error status (JS: rejected); body %q", reqBody, resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != wantStatus {
				t.Errorf("%s %s: status %d, want %d; body %q", method, target, resp.StatusCode, wantStatus, body)
			}
			for _, hv := range wantHeaders {
				if got := resp.Header.Get(hv[0]); got != hv[1] {
					t.Errorf("%s %s: header %s = %q, want %q", method, target, hv[0], got, hv[1])
				}
			}
			if bytes.HasSuffix(body, []byte("\n")) {
				t.Errorf("%s %s: response body ends with a newline (the JS client would read an empty message): %q", method, target, body)
			}
			if wantStatus != http.StatusOK {
				if got := string(body); got != respBody {
					t.Errorf("%s %s: body = %q, want %q", method, target, got, respBody)
				}
				return
			}
			var want, got []string
			if respBody != "" {
				want = strings.Split(respBody, "\n")
			}
			if len(body) > 0 {
				got = strings.Split(string(body), "\n")
			}
			gotV := make([]any, len(got))
			used := make([]bool, len(got))
			for i, l := range got {
				if gotV[i], err = parseFrame(l); err != nil {
					t.Fatalf("response line %d is not JSON: %q: %v", i+1, l, err)
				}
			}
			// Match in order; settle frames may be reordered, optional ones may be missing.
			next := 0
			for _, wl := range want {
				wv, err := parseFrame(wl)
				if err != nil {
					t.Fatalf("bad transcript line %q: %v", wl, err)
				}
				if m.skipExpected(wv) {
					continue
				}
				found := -1
				for i := range gotV {
					if !used[i] && m.match(wv, gotV[i]) {
						found = i
						break
					}
				}
				if found < 0 {
					if m.optional(wv) {
						continue
					}
					t.Errorf("response lacks %s; got:\n%s", wl, body)
					continue
				}
				if !isSettleFrame(wv) && found < next {
					t.Errorf("response line %s out of order; got:\n%s", wl, body)
				}
				if !isSettleFrame(wv) {
					next = found
				}
				used[found] = true
			}
			for i, u := range used {
				if !u && m.extra(gotV[i]) {
					t.Logf("extra response line (allowed): %s", got[i])
					continue
				}
				if !u {
					t.Errorf("unexpected response line %s; want (JS):\n%s\ngot:\n%s", got[i], respBody, body)
				}
			}
		})
	}
}

// TestGoldenMatcher checks the comparison rules the golden tests rely on.
func TestGoldenMatcher(t *testing.T) {
	t.Parallel()
	resolutions := []goldenEntry{{Dir: "s2c", Data: `["resolve",-1,"user1"]`}}
	tests := []struct {
		name     string
		file     string // allowances of this transcript
		entries  []goldenEntry
		exp, got string
		want     bool
	}{
		{"same", "", nil, `["resolve",1,3]`, `["resolve",1,3]`, true},
		{"number spelling", "", nil, `["resolve",1,1e2]`, `["resolve",1,100]`, true},
		{"key order", "", nil, `["resolve",1,{"a":1,"b":[[2]]}]`, `["resolve",1,{"b":[[2]],"a":1}]`, true},
		{"other value", "", nil, `["resolve",1,3]`, `["resolve",1,4]`, false},
		{"other ID", "", nil, `["resolve",1,3]`, `["resolve",2,3]`, false},
		{"missing key", "", nil, `["resolve",1,{"a":1,"b":2}]`, `["resolve",1,{"a":1}]`, false},
		{"extra key", "", nil, `["resolve",1,{"a":1}]`, `["resolve",1,{"a":1,"b":2}]`, false},
		{"null is not undefined", "", nil, `["resolve",1,null]`, `["resolve",1,["undefined"]]`, false},
		{"abort: message may differ", "", nil, `["abort",["error","TypeError","a"]]`, `["abort",["error","TypeError","b"]]`, true},
		{"abort: type must match", "", nil, `["abort",["error","SyntaxError","a"]]`, `["abort",["error","TypeError","a"]]`, false},
		{"reject: message must match", "", nil, `["reject",1,["error","TypeError","a"]]`, `["reject",1,["error","TypeError","b"]]`, false},
		{"reject: message may differ", "ws-error", nil, `["reject",1,["error","TypeError","a"]]`, `["reject",1,["error","TypeError","b"]]`, true},
		{"reject: type must match", "ws-error", nil, `["reject",1,["error","TypeError","a"]]`, `["reject",1,["error","Error","a"]]`, false},
		{"reject: ID must match", "ws-error", nil, `["reject",1,["error","TypeError","a"]]`, `["reject",2,["error","TypeError","a"]]`, false},
		{"inline map result", "ws-map", resolutions, `["resolve",2,[[["promise",-1]]]]`, `["resolve",2,[["user1"]]]`, true},
		{"inline map result: same promise", "ws-map", resolutions, `["resolve",2,[[["promise",-1]]]]`, `["resolve",2,[[["promise",-1]]]]`, true},
		{"inline map result: wrong value", "ws-map", resolutions, `["resolve",2,[[["promise",-1]]]]`, `["resolve",2,[["user2"]]]`, false},
		{"inline map result: not allowed", "ws-simple", resolutions, `["resolve",2,[[["promise",-1]]]]`, `["resolve",2,[["user1"]]]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newMatcher(tt.file, tt.entries)
			exp, err := parseFrame(tt.exp)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseFrame(tt.got)
			if err != nil {
				t.Fatal(err)
			}
			if ok := m.match(exp, got); ok != tt.want {
				t.Errorf("matcher.match(%s, %s) = %v, want %v", tt.exp, tt.got, ok, tt.want)
			}
		})
	}

	t.Run("inlined resolves and releases are skipped", func(t *testing.T) {
		t.Parallel()
		m := newMatcher("ws-map", resolutions)
		exp, _ := parseFrame(`["resolve",2,[[["promise",-1]]]]`)
		got, _ := parseFrame(`["resolve",2,[["user1"]]]`)
		if !m.match(exp, got) {
			t.Fatal("matcher.match() = false, want true")
		}
		res, _ := parseFrame(`["resolve",-1,"user1"]`)
		rel, _ := parseFrame(`["release",-1,1]`)
		other, _ := parseFrame(`["release",2,1]`)
		if !m.skipExpected(res) || !m.skipClient(rel) || m.skipClient(other) {
			t.Errorf("skipExpected(resolve -1), skipClient(release -1), skipClient(release 2) = %v, %v, %v; want true, true, false",
				m.skipExpected(res), m.skipClient(rel), m.skipClient(other))
		}
	})
}

// TestGoldenExpectedTables checks the table sizes derived from the JS transcripts.
func TestGoldenExpectedTables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want capnweb.Stats
	}{
		{"ws-simple", capnweb.Stats{Imports: 1, Exports: 1}},
		{"ws-error", capnweb.Stats{Imports: 1, Exports: 2}},   // push 3 is never released
		{"ws-streams", capnweb.Stats{Imports: 1, Exports: 1}}, // streams settle, pipes released
		{"ws-raw-get-method", capnweb.Stats{Imports: 1, Exports: 3}},
		{"ws-subscribe", capnweb.Stats{Imports: 1, Exports: 1}},
		{"ws-raw-callback", capnweb.Stats{Imports: 1, Exports: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			entries := loadGolden(t, filepath.Join(goldenDir, tt.file+".jsonl"))
			if got := expectedTables(entries, newMatcher(tt.file, entries)); got != tt.want {
				t.Errorf("expectedTables(%s) = %+v, want %+v", tt.file, got, tt.want)
			}
		})
	}
}
