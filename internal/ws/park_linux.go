package ws

// The parker: one epoll instance and one goroutine watch every parked connection, so that a
// parked connection holds no goroutine of its own.
//
// Concurrency model
//
//   - The parker goroutine is started by the first Park and never ends: it is the package's,
//     shared by every Conn, and blocks in epoll_wait while nothing happens.
//   - parker.mu guards the table of parked connections and every Conn's park fields, and is
//     held around each epoll_ctl, so that registering, waking and closing a connection happen
//     in one order. epoll_ctl runs inside RawConn.Control: the fd number stays valid (it cannot
//     be closed and reused) for the length of the call.
//   - A registration carries a token, never the fd number: fd numbers are reused. An event
//     whose token is no longer in the table (its connection woke or was closed meanwhile) is
//     dropped.
//   - Each wake function runs once, in a goroutine of its own, after the connection left the
//     epoll set. Nothing runs user code under mu.
//
// Go's own poller keeps its (edge-triggered) registration of the same socket; a second epoll
// instance may watch it too. The reader woken here does not rely on that poller having seen
// the edge: ReadMessage reads the socket without waiting before it waits (see waitSocket).

import (
	"sync"
	"syscall"
)

const canPark = true

type parker struct {
	once sync.Once
	epfd int
	err  error

	mu     sync.Mutex
	next   uint64
	parked map[uint64]*Conn
}

var thePark parker

func (p *parker) start() error {
	p.once.Do(func() {
		p.epfd, p.err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if p.err != nil {
			return
		}
		p.parked = map[uint64]*Conn{}
		go p.loop()
	})
	return p.err
}

func (p *parker) loop() {
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(p.epfd, events, -1)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			panic("websocket: epoll_wait: " + err.Error()) // only EBADF, EFAULT, EINVAL: a bug
		}
		for _, ev := range events[:n] {
			tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			p.mu.Lock()
			c := p.parked[tok]
			var wake func()
			if c != nil {
				wake = p.removeLocked(c)
			}
			p.mu.Unlock()
			if wake != nil {
				go wake()
			}
		}
	}
}

// park registers c's socket; wake will run once when it is readable or hangs up, or when c is
// unparked. It reports false when the socket could not be registered (it is closed, or the
// system refused): the caller then waits itself.
func (p *parker) park(c *Conn, wake func()) bool {
	if p.start() != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	tok := p.next
	ev := syscall.EpollEvent{
		Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT,
		Fd:     int32(uint32(tok)),
		Pad:    int32(uint32(tok >> 32)),
	}
	var cerr error
	if err := c.raw.Control(func(fd uintptr) {
		cerr = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	}); err != nil || cerr != nil {
		return false
	}
	p.parked[tok] = c
	c.parkTok, c.parkWake = tok, wake
	return true
}

// unpark wakes c now if it is parked (Close does, before it closes the socket).
func (p *parker) unpark(c *Conn) {
	p.mu.Lock()
	var wake func()
	if c.parkWake != nil {
		wake = p.removeLocked(c)
	}
	p.mu.Unlock()
	if wake != nil {
		go wake()
	}
}

// removeLocked takes c out of the table and the epoll set and returns its wake function.
// Caller holds mu, and c is parked.
func (p *parker) removeLocked(c *Conn) func() {
	delete(p.parked, c.parkTok)
	// When Control fails the socket is closed, and the kernel has dropped it from the set.
	_ = c.raw.Control(func(fd uintptr) {
		_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
	})
	wake := c.parkWake
	c.parkTok, c.parkWake = 0, nil
	return wake
}

// isParked reports whether c is parked (tests).
func (p *parker) isParked(c *Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.parkWake != nil
}
