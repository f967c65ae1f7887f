package connguard

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

func writeFD(fd uintptr, b []byte) (int, error) { return syscall.Write(int(fd), b) }

// A write through the socket (as a WebSocket writes without waiting) arms the deadline anew: one
// set long ago and passed does not fail it.
func TestRawWriteArms(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	g := &Guard{WriteTimeout: 30 * time.Millisecond}
	gl := g.Listen(ln)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	c, err := gl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the deadline armed by that write has passed
	raw, err := c.(*Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var werr error
	if err := raw.Write(func(fd uintptr) bool {
		n, werr = writeFD(fd, []byte("y"))
		return true
	}); err != nil || werr != nil || n != 1 {
		t.Errorf("a raw write after the deadline passed: %v, %v, %d", err, werr, n)
	}
}
