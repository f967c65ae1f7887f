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
