//go:build unix

package streamable

import (
	"errors"
	"net"
	"syscall"
)

// idleOpen reports whether nc, an idle keep-alive connection, is still
// open: a peek that does not wait finds nothing to read, rather than its
// end (the peer closed it) or bytes nobody asked for.
func idleOpen(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK)
		return true // never wait
	})
	return err == nil && open
}
