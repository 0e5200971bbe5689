//go:build unix

package stdio

import (
	"io"
	"os"
	"syscall"
)

// Std returns a Conn on the process's standard input and output. When either
// is a pipe or a socket it is switched to non-blocking mode and reopened
// through Go's poller, so that Close interrupts a blocked Read or Write
// instead of leaving a goroutine stuck in a system call. Terminals and regular
// files are used as they are (a terminal shared with a shell must stay in
// blocking mode).
func Std(opts ...Option) *Conn {
	return New(pollable(0, "/dev/stdin", os.Stdin), pollable(1, "/dev/stdout", os.Stdout), opts...)
}

func pollable(fd int, name string, fallback *os.File) io.ReadWriteCloser {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fallback
	}
	if mode := st.Mode & syscall.S_IFMT; mode != syscall.S_IFIFO && mode != syscall.S_IFSOCK {
		return fallback
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		return fallback
	}
	// os.NewFile registers a non-blocking descriptor with the poller.
	return os.NewFile(uintptr(fd), name)
}
