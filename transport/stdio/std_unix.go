//go:build unix

package stdio

import (
	"errors"
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

// writeNow writes b to w, a pollable file, with one write that does not
// wait (the usual frame fits in the pipe's buffer): n bytes written, or
// the write's error. It does nothing, 0 and nil, when w is not such a
// file or its buffer is full: the caller then writes the rest as it
// would have.
func writeNow(w io.Writer, b []byte) (int, error) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, nil
	}
	n, werr := 0, error(nil)
	if err := rc.Write(func(fd uintptr) bool {
		for {
			m, err := syscall.Write(int(fd), b)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.EAGAIN):
			case err != nil:
				werr = err
			default:
				n = m
			}
			return true // never wait: the caller's write does, interruptibly
		}
	}); err != nil {
		return 0, nil
	}
	return n, werr
}
