package overload

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// socketIdle returns how long ago c's socket last received data
// (TCP_INFO's tcpi_last_data_recv, in milliseconds, counted by the
// kernel's clock ticks); false when c is not a TCP socket. A *tls.Conn is
// read through to its connection.
func socketIdle(c net.Conn) (time.Duration, bool) {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var infoErr error
	if err := raw.Control(func(fd uintptr) {
		info, infoErr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || infoErr != nil {
		return 0, false
	}
	return time.Duration(info.Last_data_recv) * time.Millisecond, true
}
