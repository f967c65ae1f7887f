// Package ws is a small RFC 6455 WebSocket implementation shaped for capnweb: whole text or
// binary messages in, and a batch of messages out with one write system call.
//
// Why our own: the general-purpose libraries flush (one write system call) per message. A capnweb
// session answers a burst of pipelined calls with a burst of messages; writing them together
// halves the system calls on both ends, and the peer reads them with one read. It also lets an
// idle connection hold no write buffer at all.
//
// What it does: the server handshake (Accept, with an Origin check) and the client handshake
// (Dial, through an *http.Client so proxies, TLS configuration and redirects work as for any
// request); fragmented messages; ping answered with pong; the close handshake with status and
// reason; masking both ways; text messages validated as UTF-8. What it does not: extensions
// (permessage-deflate is never negotiated), subprotocols, HTTP/2 (RFC 8441).
//
// A Conn has one reader (ReadMessage) and any number of writers (WriteMessages and Close are
// safe to call concurrently with each other and with ReadMessage). Between messages the reader
// may Park the connection: on Linux one package-wide epoll goroutine then watches it, so that an
// idle connection holds neither a goroutine nor a read buffer (park_linux.go).
package ws

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// MessageType is the type of a data message.
type MessageType int

// Data message types (their opcodes).
const (
	Text   MessageType = 1
	Binary MessageType = 2
)

// Close status codes used by this package (RFC 6455 §7.4.1).
const (
	StatusNormal          = 1000
	StatusGoingAway       = 1001
	StatusProtocolError   = 1002
	StatusUnsupportedData = 1003
	StatusNoStatus        = 1005 // never sent: what a close frame without a code reports
	StatusInvalidPayload  = 1007
	StatusPolicy          = 1008
)

const (
	opContinuation = 0
	opText         = 1
	opBinary       = 2
	opClose        = 8
	opPing         = 9
	opPong         = 10

	maxControlPayload = 125
	maxCloseReason    = maxControlPayload - 2
)

// CloseError is returned by ReadMessage once the peer has sent a close frame.
type CloseError struct {
	Code   int // StatusNoStatus when the frame had no code
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("websocket: peer closed: %d %s", e.Code, e.Reason)
}

// ProtocolError reports a peer that broke RFC 6455. ReadMessage has already sent a close frame
// with Code and closed the connection.
type ProtocolError struct {
	Code int
	Msg  string
}

func (e *ProtocolError) Error() string { return "websocket: " + e.Msg }

// closeGrace bounds Close. A variable for tests.
var closeGrace = 2 * time.Second

// ErrIdle is returned by ReadMessage when IdleAfter passed with nothing to read. The connection
// is unaffected: call ReadMessage again (typically from a fresh goroutine, whose stack starts
// small again).
var ErrIdle = errors.New("websocket: idle")

// ErrTooBig is returned by ReadMessage for a message over its limit.
var ErrTooBig = errors.New("websocket: message exceeds the read limit")

// ErrClosed is returned by writes after Close, and by ReadMessage after the connection closed
// without a close frame from the peer being read.
var ErrClosed = errors.New("websocket: connection closed")

// Conn is one WebSocket connection.
type Conn struct {
	rwc    io.ReadWriteCloser
	br     *bufio.Reader
	client bool // mask outgoing frames; expect unmasked incoming ones

	// IdleAfter, when positive, makes ReadMessage return ErrIdle after waiting that long for a
	// message to start. It only applies where the read buffer is given back while idle (Linux,
	// plain TCP). Set it before the first ReadMessage.
	IdleAfter time.Duration
	// SpinWait, when positive, is how long the reader polls the socket for the next message
	// before it sleeps waiting for it, while polling pays (see spin). It applies where IdleAfter
	// does. Set it before the first ReadMessage.
	SpinWait time.Duration

	rmu sync.Mutex      // held by the reader for the length of ReadMessage
	raw syscall.RawConn // when set, the read buffer is given back while idle (see idleWait)

	// The callbacks handed to raw, made once (newConn), with their state: a closure made per
	// wait or write, capturing its results, cost allocations on every one. waitFn's state is
	// under rmu, writeFn's under wmu.
	waitFn  func(fd uintptr) bool
	waitErr error
	// The wait under way (waitSocket) and the polling before it (spin), under rmu.
	waits     int          // fillNow calls in this wait
	waitStart time.Time    // when it began (SpinWait set)
	spinOff   bool         // the last poll found nothing: sleep at once
	spinHits  int          // polls that found a message (tests)
	src       socketSource // what the pooled read buffers read from (raw set)
	writeFn   func(fd uintptr) bool
	wb        []byte
	wn        int
	wErr      error

	parkTok  uint64 // the connection's token in the parker while parked; guarded by its mu
	parkWake func() // what to run when it wakes; nil when not parked

	framesRead atomic.Uint64 // frames read, control frames included (Frames)

	wmu       sync.Mutex
	wbuf      []byte  // frames being written; nil between writes
	pending   []byte  // the rest of frames TryWriteMessages could not write at once (under wmu)
	pendBuf   []byte  // the pooled buffer pending points into
	pendBox   *[]byte // and its box (getBuf)
	closeSent bool
	werr      error

	emu       sync.Mutex    // guards readEnded, gotClose and left
	readEnded bool          // the reader saw a close frame or a read error
	gotClose  chan struct{} // closed once readEnded; made by the Close that waits for it
	// left is closed when a ReadMessage returns while Close waits for the reader (closeWait
	// set): the reader may read no more, and Close then reads the peer's close frame itself.
	left      chan struct{}
	closeWait atomic.Bool
	shutOnce  sync.Once
}

func newConn(rwc io.ReadWriteCloser, br *bufio.Reader, client bool) *Conn {
	c := &Conn{rwc: rwc, br: br, client: client}
	if sc, ok := rwc.(syscall.Conn); ok && canReadNow {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw = raw
			c.src.c = c
			c.waitFn, c.writeFn = c.fillNow, c.writeSome
		}
	}
	if c.br == nil && c.raw == nil {
		c.br = bufio.NewReaderSize(rwc, readBufSize)
	}
	return c
}

const readBufSize = 4096

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}

// idleWait is called before each message. On a connection whose socket it can watch, it gives
// the read buffer back when it holds nothing, waits until the socket is readable, then takes a
// buffer again: an idle connection holds no read buffer.
func (c *Conn) idleWait() error {
	if !c.releaseIfEmpty() {
		return nil
	}
	nc, timed := c.rwc.(net.Conn)
	timed = timed && c.IdleAfter > 0
	if timed {
		nc.SetReadDeadline(time.Now().Add(c.IdleAfter))
	}
	err := c.waitSocket() // the bytes it waited for are in the read buffer
	if timed {
		nc.SetReadDeadline(time.Time{})
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return ErrIdle
	}
	if err != nil {
		return c.readErr(err)
	}
	return nil
}

// WaitReadable blocks until the peer has sent something (or the connection ended), holding no
// read buffer and using little stack: the caller then calls ReadMessage. Where the socket
// cannot be watched (see IdleAfter) it returns at once.
func (c *Conn) WaitReadable() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.releaseIfEmpty() {
		_ = c.waitSocket() // an error is ReadMessage's to report
	}
}

// Park arranges for wake to run once, in a goroutine of its own, when the peer has sent
// something (or the connection ended) or when the connection is closed, and returns at once:
// the caller's goroutine can then end, so that an idle connection holds no goroutine and no
// read buffer. wake typically calls ReadMessage. Park reports false, arranging nothing, where
// it cannot watch the socket that way (not Linux, TLS, a closed connection) or when input is
// already buffered: the caller then goes on reading, or waits with WaitReadable. Only the
// reader calls Park, between two ReadMessage calls.
func (c *Conn) Park(wake func()) bool {
	if !canPark {
		return false
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if !c.releaseIfEmpty() {
		return false
	}
	return thePark.park(c, wake)
}

// releaseIfEmpty gives the read buffer back when the socket can be watched and the buffer holds
// nothing, and reports whether the caller should wait on the socket.
func (c *Conn) releaseIfEmpty() bool {
	if c.raw == nil || c.br != nil && c.br.Buffered() > 0 {
		return false
	}
	if c.br != nil {
		c.dropReader()
	}
	return true
}

// waitSocket waits until the socket has data, which it then holds in a read buffer, or an end
// (or its read deadline passes); meanwhile it holds no read buffer.
func (c *Conn) waitSocket() error {
	c.waitErr, c.waits = nil, 0
	err := c.raw.Read(c.waitFn)
	if err == nil {
		err = c.waitErr
	}
	return err
}

// fillNow is waitSocket's callback (c.waitFn): it reads what the socket holds into a read
// buffer, without waiting, and reports whether it read anything (or met an end). On a socket
// with nothing to read it gives the buffer back: the poller then waits, and calls it again.
// Reading at once, where a peek would only look, saves a system call on every message that is
// there already, as it is when a peer sends several in a row.
func (c *Conn) fillNow(fd uintptr) bool {
	c.takeReader()
	c.src.fd, c.src.now = fd, true
	_, err := c.br.Peek(1)
	if c.waits == 0 && err == errWouldBlock && c.SpinWait > 0 {
		c.waitStart = time.Now()
		err = c.spin()
	}
	c.src.now = false
	c.waits++
	if err == errWouldBlock {
		c.dropReader()
		return false
	}
	if c.spinOff && c.waits > 1 && time.Since(c.waitStart) <= c.SpinWait {
		c.spinOff = false // it came soon after the wait began: polling would have caught it
	}
	c.waitErr = err
	return true
}

// spin polls the socket (c.br, reading without waiting) until a message arrives or SpinWait
// has passed since the wait began, yielding the thread between polls, and returns what the last
// poll returned. A poll that comes up empty turns polling off, until a message arrives within
// SpinWait of a wait's start again (fillNow): a peer that sends again within microseconds is
// read without sleeping (sleeping and being woken cost far more than a poll), and one that does
// not costs one poll. Nothing is polled while as many readers as spinners allows already poll.
func (c *Conn) spin() error {
	if c.spinOff || !spinners.acquire() {
		return errWouldBlock
	}
	defer spinners.release()
	deadline := c.waitStart.Add(c.SpinWait)
	for {
		runtime.Gosched()
		if _, err := c.br.Peek(1); err != errWouldBlock {
			c.spinHits++
			return err
		}
		if !time.Now().Before(deadline) {
			c.spinOff = true
			return errWouldBlock
		}
	}
}

// spinLimit bounds the readers polling at once to half the Ps (GOMAXPROCS), so that polling
// never takes the threads the rest of the program needs.
type spinLimit struct{ n atomic.Int32 }

var spinners spinLimit

func (l *spinLimit) acquire() bool {
	max := int32(runtime.GOMAXPROCS(0) / 2)
	for {
		n := l.n.Load()
		if n >= max {
			return false
		}
		if l.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (l *spinLimit) release() { l.n.Add(-1) }

// socketSource is what a pooled read buffer reads from on a connection whose socket it can
// watch: the connection, or, inside fillNow, the socket itself without waiting.
type socketSource struct {
	c   *Conn
	fd  uintptr
	now bool
}

func (s *socketSource) Read(b []byte) (int, error) {
	if s.now {
		return readNow(s.fd, b)
	}
	return s.c.rwc.Read(b)
}

// errWouldBlock: the socket holds nothing to read (fillNow).
var errWouldBlock = errors.New("websocket: nothing to read yet")

// takeReader makes sure c.br is set.
func (c *Conn) takeReader() {
	if c.br == nil {
		c.br = readerPool.Get().(*bufio.Reader)
		if c.raw != nil {
			c.br.Reset(&c.src)
		} else {
			c.br.Reset(c.rwc)
		}
	}
}

func (c *Conn) dropReader() {
	if c.br.Size() == readBufSize {
		c.br.Reset(nil)
		readerPool.Put(c.br)
	}
	c.br = nil
}

// ReadMessage returns the next data message, whole. A message longer than limit bytes (limit >
// 0) is read to its end and dropped, and ReadMessage returns ErrTooBig: the connection stays
// usable, so the caller can say why it gives up. The returned slice is the caller's. After the
// peer's close frame it returns a *CloseError (having answered the close); after a protocol
// violation a *ProtocolError.
func (c *Conn) ReadMessage(limit int) (MessageType, []byte, error) {
	c.rmu.Lock()
	typ, msg, err := c.readLocked(limit)
	c.rmu.Unlock()
	if c.closeWait.Load() {
		c.readerLeft()
	}
	return typ, msg, err
}

func (c *Conn) readLocked(limit int) (MessageType, []byte, error) {
	typ, msg, err := c.readMessage(limit)
	if err == ErrIdle {
		return 0, nil, err
	}
	if err != nil {
		c.sawClose()
		var pe *ProtocolError
		if errors.As(err, &pe) {
			c.fail(pe.Code, pe.Msg)
		}
		return 0, nil, err
	}
	return typ, msg, nil
}

// readerLeft wakes a Close waiting for the reader: ReadMessage returned, and may not be
// called again.
func (c *Conn) readerLeft() {
	c.emu.Lock()
	defer c.emu.Unlock()
	if c.left != nil {
		close(c.left)
		c.left = nil
	}
}

// leaving returns a channel readerLeft closes. Only Close needs one.
func (c *Conn) leaving() <-chan struct{} {
	c.emu.Lock()
	defer c.emu.Unlock()
	if c.left == nil {
		c.left = make(chan struct{})
	}
	c.closeWait.Store(true)
	return c.left
}

func (c *Conn) readMessage(limit int) (MessageType, []byte, error) {
	var msg []byte // allocated as frames arrive: exactly once for a one-frame message
	var typ MessageType
	tooBig := false
	for {
		if typ == 0 {
			// Between messages (a ping or pong may have come alone): wait as an idle
			// connection does, so that one woken by a pong parks again (ErrIdle).
			if err := c.idleWait(); err != nil {
				return 0, nil, err
			}
		}
		h, err := c.readHeader()
		if err != nil {
			return 0, nil, err
		}
		if h.op >= opClose {
			payload, err := c.readPayload(h, nil)
			if err != nil {
				return 0, nil, err
			}
			if err := c.control(h.op, payload); err != nil {
				return 0, nil, err
			}
			continue
		}
		switch {
		case h.op == opContinuation && typ == 0:
			return 0, nil, &ProtocolError{StatusProtocolError, "continuation frame without a message"}
		case h.op != opContinuation && typ != 0:
			return 0, nil, &ProtocolError{StatusProtocolError, "new message inside a fragmented one"}
		case h.op == opText || h.op == opBinary:
			typ = MessageType(h.op)
		case h.op != opContinuation:
			return 0, nil, &ProtocolError{StatusProtocolError, fmt.Sprintf("unknown opcode %d", h.op)}
		}
		if !tooBig && limit > 0 && int64(len(msg))+h.length > int64(limit) {
			tooBig, msg = true, nil
		}
		if tooBig {
			if _, err := c.br.Discard(int(h.length)); err != nil {
				return 0, nil, c.readErr(err)
			}
		} else if msg, err = c.readPayload(h, msg); err != nil {
			return 0, nil, err
		}
		if h.fin {
			break
		}
	}
	if tooBig {
		return 0, nil, ErrTooBig
	}
	if typ == Text && !utf8.Valid(msg) {
		return 0, nil, &ProtocolError{StatusInvalidPayload, "text message is not valid UTF-8"}
	}
	if msg == nil {
		msg = []byte{}
	}
	return typ, msg, nil
}

type header struct {
	fin    bool
	op     byte
	masked bool
	key    [4]byte
	length int64
}

func (c *Conn) readHeader() (header, error) {
	var h header
	b0, err := c.br.ReadByte()
	if err != nil {
		return h, c.readErr(err)
	}
	b1, err := c.br.ReadByte()
	if err != nil {
		return h, c.readErr(err)
	}
	c.framesRead.Add(1)
	h.fin = b0&0x80 != 0
	h.op = b0 & 0x0f
	h.masked = b1&0x80 != 0
	if b0&0x70 != 0 {
		return h, &ProtocolError{StatusProtocolError, "reserved bits set without a negotiated extension"}
	}
	if h.masked == c.client {
		if c.client {
			return h, &ProtocolError{StatusProtocolError, "masked frame from the server"}
		}
		return h, &ProtocolError{StatusProtocolError, "unmasked frame from the client"}
	}
	// The extended length and the mask key are read a byte at a time: a slice of a local
	// handed to io.ReadFull escapes, and cost an allocation on every frame.
	switch n := b1 & 0x7f; n {
	case 126:
		var b [2]byte
		if err := c.readBytes(b[:]); err != nil {
			return h, err
		}
		h.length = int64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if err := c.readBytes(b[:]); err != nil {
			return h, err
		}
		u := binary.BigEndian.Uint64(b[:])
		if u>>63 != 0 {
			return h, &ProtocolError{StatusProtocolError, "frame length has its most significant bit set"}
		}
		h.length = int64(u)
	default:
		h.length = int64(n)
	}
	if h.op >= opClose {
		if !h.fin {
			return h, &ProtocolError{StatusProtocolError, "fragmented control frame"}
		}
		if h.length > maxControlPayload {
			return h, &ProtocolError{StatusProtocolError, "control frame longer than 125 bytes"}
		}
		if h.op > opPong {
			return h, &ProtocolError{StatusProtocolError, fmt.Sprintf("unknown opcode %d", h.op)}
		}
	}
	if h.masked {
		if err := c.readBytes(h.key[:]); err != nil {
			return h, err
		}
	}
	return h, nil
}

// readBytes fills b from the read buffer, a byte at a time.
func (c *Conn) readBytes(b []byte) error {
	for i := range b {
		x, err := c.br.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // as io.ReadFull says it: the frame was cut short
			}
			return c.readErr(err)
		}
		b[i] = x
	}
	return nil
}

// readPayload appends the frame's payload, unmasked, to dst.
func (c *Conn) readPayload(h header, dst []byte) ([]byte, error) {
	start := len(dst)
	// Grow with what has arrived, not with what the header claims: a frame announcing an
	// exabyte must not allocate one.
	for left := h.length; left > 0; {
		n := int(min(left, int64(max(64<<10, len(dst)-start))))
		dst = grow(dst, n)
		if _, err := io.ReadFull(c.br, dst[len(dst)-n:]); err != nil {
			return nil, c.readErr(err)
		}
		left -= int64(n)
	}
	if h.masked {
		mask(h.key, dst[start:])
	}
	return dst, nil
}

func (c *Conn) readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", ErrClosed, io.ErrUnexpectedEOF)
	}
	if errors.Is(err, net.ErrClosed) {
		return ErrClosed
	}
	return err
}

// control handles a ping, pong or close frame.
func (c *Conn) control(op byte, payload []byte) error {
	switch op {
	case opPing:
		if err := c.writeFrames(opPong, [][]byte{payload}); err != nil && !errors.Is(err, ErrClosed) {
			return err
		}
		return nil
	case opPong:
		return nil
	}
	ce := &CloseError{Code: StatusNoStatus}
	switch {
	case len(payload) == 1:
		return &ProtocolError{StatusProtocolError, "close frame with a one-byte payload"}
	case len(payload) >= 2:
		ce.Code = int(binary.BigEndian.Uint16(payload))
		if !validCloseCode(ce.Code) {
			return &ProtocolError{StatusProtocolError, fmt.Sprintf("invalid close code %d", ce.Code)}
		}
		if !utf8.Valid(payload[2:]) {
			return &ProtocolError{StatusInvalidPayload, "close reason is not valid UTF-8"}
		}
		ce.Reason = string(payload[2:])
	}
	// Answer the close (echoing its code) and end the connection: the peer sends nothing more.
	code := ce.Code
	if code == StatusNoStatus {
		code = StatusNormal
	}
	c.sendClose(code, "")
	c.sawClose()
	c.shutdown()
	return ce
}

func validCloseCode(code int) bool {
	switch {
	case code >= 3000 && code <= 4999:
		return true
	case code >= 1000 && code <= 1014:
		return code != 1004 && code != 1005 && code != 1006
	}
	return false
}

// sawClose records that the reader is done, waking a Close waiting for it.
func (c *Conn) sawClose() {
	c.emu.Lock()
	defer c.emu.Unlock()
	if !c.readEnded {
		c.readEnded = true
		if c.gotClose != nil {
			close(c.gotClose)
		}
	}
}

// readDone returns a channel closed once the reader is done. Only Close needs one: an idle
// connection holds none.
func (c *Conn) readDone() <-chan struct{} {
	c.emu.Lock()
	defer c.emu.Unlock()
	if c.gotClose == nil {
		c.gotClose = make(chan struct{})
		if c.readEnded {
			close(c.gotClose)
		}
	}
	return c.gotClose
}

// shutdown closes the connection, waking a parked reader (which then reads ErrClosed).
func (c *Conn) shutdown() {
	c.shutOnce.Do(func() {
		if c.raw != nil {
			thePark.unpark(c) // while the fd is still open: it leaves the epoll set
		}
		c.rwc.Close()
	})
}

// fail sends a close frame with code and reason and closes the connection.
func (c *Conn) fail(code int, reason string) {
	c.sendClose(code, reason)
	c.shutdown()
}

// Frames returns how many frames the connection has read, ping, pong and close frames
// included: a count that moves while the peer is alive and sends anything.
func (c *Conn) Frames() uint64 { return c.framesRead.Load() }

// Ping sends a ping frame. A live peer answers with a pong, which ReadMessage reads (counted
// by Frames) without returning it.
func (c *Conn) Ping() error { return c.writeFrames(opPing, [][]byte{nil}) }

// WriteMessages writes msgs as data messages of type typ, in order, with one write to the
// connection.
func (c *Conn) WriteMessages(typ MessageType, msgs ...[]byte) error {
	return c.writeFrames(byte(typ), msgs)
}

// writeFrames writes one unfragmented frame per payload, then flushes once.
func (c *Conn) writeFrames(op byte, payloads [][]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent {
		return ErrClosed
	}
	return c.writeLocked(op, payloads)
}

func (c *Conn) writeLocked(op byte, payloads [][]byte) error {
	if err := c.writePendingLocked(); err != nil {
		return err
	}
	buf, box := c.frames(op, payloads)
	_, err := c.rwc.Write(buf)
	putBuf(buf, box)
	if err != nil {
		c.werr = writeErr(err)
	}
	return c.werr
}

// frames returns one unfragmented frame per payload, in a pooled buffer, with its box (putBuf
// both).
func (c *Conn) frames(op byte, payloads [][]byte) ([]byte, *[]byte) {
	n := 0
	for _, p := range payloads {
		n += 14 + len(p)
	}
	buf, box := getBuf(n)
	for _, p := range payloads {
		buf = c.appendFrame(buf, op, p)
	}
	return buf, box
}

// writeErr is the error a write reports: ErrClosed once the connection is closed.
func writeErr(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return ErrClosed
	}
	return err
}

// TryWriteMessages is WriteMessages for a caller that must not wait: a read loop answering what
// it read. It reports whether it took the messages. It does not take them when it would have to
// wait for another write, or where the connection cannot be written without blocking (only
// plain TCP on Linux can). When it takes them, it writes what the socket accepts at once, and a
// background goroutine writes the rest; later writes go after it.
func (c *Conn) TryWriteMessages(typ MessageType, msgs ...[]byte) (bool, error) {
	if c.raw == nil || !c.wmu.TryLock() {
		return false, nil
	}
	defer c.wmu.Unlock()
	switch {
	case c.closeSent:
		return true, ErrClosed
	case c.werr != nil:
		return true, c.werr
	case c.pending != nil:
		return false, nil // the background write is not done
	}
	buf, box := c.frames(byte(typ), msgs)
	written, err := c.writeNow(buf)
	switch {
	case err != nil:
		putBuf(buf, box)
		c.werr = err
		return true, err
	case written == len(buf):
		putBuf(buf, box)
		return true, nil
	}
	c.pending, c.pendBuf, c.pendBox = buf[written:], buf, box
	go func() {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		_ = c.writePendingLocked() // an error is the next write's to report
	}()
	return true, nil
}

// writeNow writes what the socket takes of b without waiting. Caller holds wmu.
func (c *Conn) writeNow(b []byte) (int, error) {
	c.wb, c.wn, c.wErr = b, 0, nil
	err := c.raw.Write(c.writeFn)
	if err == nil {
		err = c.wErr
	}
	n := c.wn
	c.wb = nil
	return n, writeErr(err)
}

// writeSome is writeNow's callback (c.writeFn).
func (c *Conn) writeSome(fd uintptr) bool {
	c.wn, c.wErr = writeNow(fd, c.wb)
	return true // never wait
}

// writePendingLocked writes what TryWriteMessages left, if anything. Caller holds wmu.
func (c *Conn) writePendingLocked() error {
	if c.werr != nil {
		return c.werr
	}
	if c.pending == nil {
		return nil
	}
	_, err := c.rwc.Write(c.pending)
	putBuf(c.pendBuf, c.pendBox)
	c.pending, c.pendBuf, c.pendBox = nil, nil, nil
	if err != nil {
		c.werr = writeErr(err)
	}
	return c.werr
}

// Buffered reports whether bytes the peer sent are already read into the connection's buffer,
// so that the next ReadMessage may well not wait. It says false while a read (or Close, which
// reads) is under way.
func (c *Conn) Buffered() bool {
	if !c.rmu.TryLock() {
		return false
	}
	defer c.rmu.Unlock()
	return c.br != nil && c.br.Buffered() > 0
}

func (c *Conn) appendFrame(b []byte, op byte, p []byte) []byte {
	b = append(b, 0x80|op)
	var m byte
	if c.client {
		m = 0x80
	}
	switch n := len(p); {
	case n <= 125:
		b = append(b, m|byte(n))
	case n <= 0xffff:
		b = append(b, m|126, byte(n>>8), byte(n))
	default:
		b = append(b, m|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if !c.client {
		return append(b, p...)
	}
	var key [4]byte
	if _, err := rand.Read(key[:]); err != nil {
		panic("websocket: crypto/rand: " + err.Error())
	}
	b = append(b, key[:]...)
	start := len(b)
	b = append(b, p...)
	mask(key, b[start:])
	return b
}

// sendClose sends a close frame once; later calls do nothing.
func (c *Conn) sendClose(code int, reason string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent {
		return
	}
	c.closeSent = true
	reason = truncateUTF8(reason, maxCloseReason)
	p := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	_ = c.writeLocked(opClose, [][]byte{append(p, reason...)})
}

// Close sends a close frame with code and reason (truncated to 123 bytes on a UTF-8 boundary),
// waits for the peer's answering close frame, and closes the connection. All of it takes at most
// closeGrace: a peer that stopped reading (so that a write is blocked) or never answers is cut
// off then. A concurrent ReadMessage returns the peer's *CloseError or ErrClosed.
func (c *Conn) Close(code int, reason string) error {
	cutoff := make(chan struct{})
	cut := time.AfterFunc(closeGrace, func() { close(cutoff); c.shutdown() })
	defer cut.Stop()
	c.sendClose(code, reason)
	for {
		left := c.leaving() // before TryLock: a reader that leaves after it fails wakes us
		if c.rmu.TryLock() {
			// No reader: read (and drop) what the peer still sends until its close frame.
			c.takeReader()
			for c.skipFrame() == nil {
			}
			c.sawClose()
			c.rmu.Unlock()
			break
		}
		// The reader sees the close frame, or the error after the cut. If it returns a
		// message instead, it may read no more (its session ended): take over.
		select {
		case <-c.readDone():
		case <-cutoff:
		case <-left:
			continue
		}
		break
	}
	c.shutdown()
	return nil
}

// skipFrame reads and drops one frame during Close; after a close frame it returns ErrClosed.
// It drops the close frame's payload too: a reader that comes later (a parked one, woken by
// the close) must find nothing left to read but the end.
func (c *Conn) skipFrame() error {
	h, err := c.readHeader()
	if err != nil {
		return err
	}
	if _, err := c.br.Discard(int(h.length)); err != nil {
		return err
	}
	if h.op == opClose {
		return ErrClosed
	}
	return nil
}

// ---- handshakes ----

const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + acceptGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// AcceptOptions configure Accept.
type AcceptOptions struct {
	// OriginPatterns lists the hosts (path.Match patterns, case-insensitive; with "://" they
	// match scheme://host) allowed to open a connection from a page of another origin. A
	// request whose Origin host equals its Host is always allowed; one without Origin (not a
	// browser) too.
	OriginPatterns []string
}

// Accept completes the server handshake for r. On failure it has already answered the
// request (400, 403, 426 or 500) and returns the reason.
func Accept(w http.ResponseWriter, r *http.Request, opts *AcceptOptions) (*Conn, error) {
	var o AcceptOptions
	if opts != nil {
		o = *opts
	}
	fail := func(code int, msg string) (*Conn, error) {
		http.Error(w, msg, code)
		return nil, errors.New("websocket: " + msg)
	}
	if r.ProtoMajor != 1 {
		return fail(http.StatusBadRequest, "WebSocket needs HTTP/1.1")
	}
	if !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		return fail(http.StatusUpgradeRequired, "a WebSocket upgrade request was expected")
	}
	if r.Method != http.MethodGet {
		return fail(http.StatusMethodNotAllowed, "a WebSocket upgrade must be a GET")
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		return fail(http.StatusBadRequest, fmt.Sprintf("unsupported Sec-WebSocket-Version %q", v))
	}
	key := r.Header.Get("Sec-WebSocket-Key")
	if k, err := base64.StdEncoding.DecodeString(key); err != nil || len(k) != 16 {
		return fail(http.StatusBadRequest, "invalid Sec-WebSocket-Key")
	}
	if err := checkOrigin(r, o.OriginPatterns); err != nil {
		return fail(http.StatusForbidden, err.Error())
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return fail(http.StatusInternalServerError, "the response writer cannot be hijacked")
	}
	h := w.Header()
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Accept", acceptKey(key))
	w.WriteHeader(http.StatusSwitchingProtocols)
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, fmt.Errorf("websocket: hijack: %w", err)
	}
	// The 101 is in brw's writer; flush it, then write frames straight to the connection.
	if err := brw.Writer.Flush(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("websocket: writing the handshake: %w", err)
	}
	return newConn(conn, brw.Reader, false), nil
}

func checkOrigin(r *http.Request, patterns []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return fmt.Errorf("request Origin %q is not a URL with a host", origin)
	}
	if strings.EqualFold(r.Host, u.Host) {
		return nil
	}
	for _, p := range patterns {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		ok, err := path.Match(strings.ToLower(p), strings.ToLower(target))
		if err != nil {
			return fmt.Errorf("bad origin pattern %q: %w", p, err)
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("request Origin %q is not allowed for Host %q", u.Host, r.Host)
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// DialOptions configure Dial.
type DialOptions struct {
	// Header is sent with the upgrade request.
	Header http.Header
	// HTTPClient makes the upgrade request (its Timeout bounds the handshake only). Nil means
	// http.DefaultClient. For a plain ws:// URL that its transport would not proxy, Dial opens
	// the connection itself with the transport's dialer, when the transport is an
	// *http.Transport (the default one is) and the client has no cookie jar: the Conn then owns
	// the socket, so it can poll it (SpinWait) and write without waiting (TryWriteMessages), as
	// a server's Conn does. Otherwise the client makes the request, and the Conn reads and
	// writes through its response body.
	HTTPClient *http.Client
}

// Dial opens a client connection to rawURL (ws, wss, http or https). ctx bounds the
// handshake; canceling it later does not affect the connection.
func Dial(ctx context.Context, rawURL string, opts *DialOptions) (*Conn, error) {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	case "http", "https":
	default:
		return nil, fmt.Errorf("websocket: unsupported URL scheme %q", u.Scheme)
	}
	hc := http.DefaultClient
	if o.HTTPClient != nil {
		hc = o.HTTPClient
	}
	client := *hc
	if client.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, client.Timeout)
		defer cancel()
		client.Timeout = 0 // it would also bound the connection's life
	}
	var k [16]byte
	if _, err := rand.Read(k[:]); err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	key := base64.StdEncoding.EncodeToString(k[:])
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	for name, vs := range o.Header {
		req.Header[name] = append([]string(nil), vs...)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", key)
	if t := directTransport(&client, req); t != nil {
		resp, conn, br, err := dialDirect(ctx, t, req)
		if err != nil {
			return nil, fmt.Errorf("websocket: %w", err)
		}
		if err := checkUpgrade(resp, key); err != nil {
			conn.Close()
			return nil, err
		}
		return newConn(conn, br, true), nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	if err := checkUpgrade(resp, key); err != nil {
		resp.Body.Close()
		return nil, err
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, errors.New("websocket: the HTTP client's response body is not writable (a custom RoundTripper?)")
	}
	return newConn(rwc, nil, true), nil
}

// checkUpgrade checks the server's answer to an upgrade request sent with key: a 101 that
// accepts it, with no extension.
func checkUpgrade(resp *http.Response, key string) error {
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("websocket: the server answered %s, not 101 Switching Protocols: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if !headerHasToken(resp.Header, "Upgrade", "websocket") || !headerHasToken(resp.Header, "Connection", "upgrade") {
		return errors.New("websocket: the server's 101 lacks Upgrade: websocket / Connection: Upgrade")
	}
	if resp.Header.Get("Sec-WebSocket-Accept") != acceptKey(key) {
		return errors.New("websocket: the server's Sec-WebSocket-Accept does not match the key")
	}
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
		return fmt.Errorf("websocket: the server chose extensions %q that were not offered", ext)
	}
	return nil
}

// directTransport returns the transport with whose dialer Dial opens the connection for req
// itself, or nil when the upgrade must go through client: a TLS URL, a proxy for it, a cookie
// jar, or a RoundTripper that is not an *http.Transport.
func directTransport(client *http.Client, req *http.Request) *http.Transport {
	if req.URL.Scheme != "http" || client.Jar != nil {
		return nil
	}
	var t *http.Transport
	switch rt := client.Transport.(type) {
	case nil:
		t, _ = http.DefaultTransport.(*http.Transport)
	case *http.Transport:
		t = rt
	}
	if t == nil {
		return nil
	}
	if t.Proxy != nil {
		if proxy, err := t.Proxy(req); err != nil || proxy != nil {
			return nil
		}
	}
	return t
}

// dialDirect connects with t's dialer, sends req and reads the answer with a buffer of its own,
// which then holds whatever the server sent after it. ctx bounds all of it.
func dialDirect(ctx context.Context, t *http.Transport, req *http.Request) (*http.Response, net.Conn, *bufio.Reader, error) {
	dial := t.DialContext
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, nil, err
	}
	// Ending ctx unblocks the handshake; once it is over, ctx no longer matters.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	br := bufio.NewReaderSize(conn, readBufSize)
	err = req.Write(conn)
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(br, req)
	}
	if err == nil && resp.StatusCode != http.StatusSwitchingProtocols {
		// Read what checkUpgrade quotes of a refusal now, while ctx bounds it: a body without
		// a length lasts until the server closes.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	if !stop() && (err != nil || resp.StatusCode == http.StatusSwitchingProtocols) {
		err = context.Cause(ctx) // the deadline may have cut the handshake short; a refusal stands
	}
	if err != nil {
		conn.Close()
		return nil, nil, nil, err
	}
	return resp, conn, br, nil
}

// ---- helpers ----

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// mask XORs b with the masking key (RFC 6455 §5.3).
func mask(key [4]byte, b []byte) {
	k := key
	k8 := uint64(binary.LittleEndian.Uint32(k[:]))
	k8 |= k8 << 32
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])^k8)
	}
	for ; i < len(b); i++ {
		b[i] ^= k[i&3]
	}
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, max(2*cap(b), len(b)+n))
	copy(nb, b)
	return nb
}

// Write buffers are pooled: an idle connection holds none.
var bufPool sync.Pool

const maxPooledBuf = 64 << 10

// getBuf returns a buffer for n bytes and, for a pooled one, its box: the *[]byte the pool
// holds it in, which putBuf reuses, so that giving a buffer back costs no allocation.
func getBuf(n int) ([]byte, *[]byte) {
	if n <= maxPooledBuf {
		if box, ok := bufPool.Get().(*[]byte); ok {
			return (*box)[:0], box
		}
		return make([]byte, 0, maxPooledBuf), nil
	}
	return make([]byte, 0, n), nil
}

// putBuf gives a buffer from getBuf back, with its box (nil: one is made).
func putBuf(b []byte, box *[]byte) {
	if cap(b) != maxPooledBuf {
		return
	}
	if box == nil {
		box = new([]byte)
	}
	*box = b[:0]
	bufPool.Put(box)
}
