package ws

import (
	"io"
	"os"
	"syscall"
)

const canReadNow = true

// readNow reads what the socket fd holds into b, without waiting: errWouldBlock when it
// holds nothing, io.EOF when the peer closed.
func readNow(fd uintptr, b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// writeNow writes what the socket fd takes of b, without waiting.
func writeNow(fd uintptr, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Write(int(fd), b[n:])
		switch err {
		case nil:
			n += m
		case syscall.EINTR:
		case syscall.EAGAIN:
			return n, nil
		default:
			return n, err
		}
	}
	return n, nil
}
