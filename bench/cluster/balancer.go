package main

// The load balancer in front of a cluster: TCP, round robin by connection, as an L4 balancer
// (or an L7 one without affinity, for clients that keep their connection) spreads clients.

import (
	"io"
	"net"
	"sync"
)

// balancer forwards each connection it accepts to the next backend in turn. Its goroutines —
// the accept loop and two copiers per connection — end when close closes the listener and
// every connection.
type balancer struct {
	ln       net.Listener
	backends []string

	mu     sync.Mutex
	turn   int
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func newBalancer(backends []string) (*balancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &balancer{ln: ln, backends: backends, conns: map[net.Conn]struct{}{}}
	b.wg.Go(b.serve)
	return b, nil
}

func (b *balancer) addr() string { return b.ln.Addr().String() }

func (b *balancer) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		backend := b.backends[b.turn%len(b.backends)]
		b.turn++
		b.mu.Unlock()
		b.wg.Go(func() { b.forward(c, backend) })
	}
}

// track registers c to be closed by close; false if the balancer is closed already.
func (b *balancer) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

func (b *balancer) forward(c net.Conn, backend string) {
	defer c.Close()
	if !b.track(c) {
		return
	}
	up, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer up.Close()
	if !b.track(up) {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(up, c)
		up.(*net.TCPConn).CloseWrite()
	}()
	io.Copy(c, up)
	c.(*net.TCPConn).CloseWrite()
	<-done
	b.mu.Lock()
	delete(b.conns, c)
	delete(b.conns, up)
	b.mu.Unlock()
}

// close stops accepting, closes every connection and waits for the goroutines.
func (b *balancer) close() {
	b.ln.Close()
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}
