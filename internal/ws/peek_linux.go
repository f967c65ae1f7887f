package ws

import "syscall"

const canPeek = true

// peek reports whether the socket fd has data (or an end) to read, without reading it and
// without blocking.
func peek(fd uintptr) (bool, error) {
	var b [1]byte
	for {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch err {
		case nil:
			return true, nil // data, or 0 bytes: the peer closed; the read will say so
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false, nil
		}
		return false, err
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
