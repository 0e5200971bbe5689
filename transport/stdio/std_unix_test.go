//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stdio

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPollableFallsBack(t *testing.T) {
	t.Parallel()
	fallback, err := os.Open(os.DevNull)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fallback.Close() })

	regular, err := os.Create(filepath.Join(t.TempDir(), "regular"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = regular.Close() })

	tests := []struct {
		name string
		fd   int
	}{
		{name: "invalid descriptor", fd: -1},
		{name: "regular file", fd: int(regular.Fd())},
		{name: "character device", fd: int(fallback.Fd())},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pollable(tc.fd, "/dev/test", fallback)
			assert.Same(t, fallback, got)
		})
	}
}

func TestPollableReopensPipesAndSockets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// fds returns a descriptor to hand to pollable; its peer stays open
		// and silent until the test ends.
		fds func(t *testing.T) int
	}{
		{
			name: "pipe",
			fds: func(t *testing.T) int {
				r, w, err := os.Pipe()
				require.NoError(t, err)
				t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
				fd, err := syscall.Dup(int(r.Fd()))
				require.NoError(t, err)
				return fd
			},
		},
		{
			name: "socket",
			fds: func(t *testing.T) int {
				fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
				require.NoError(t, err)
				t.Cleanup(func() { _ = syscall.Close(fds[1]) })
				return fds[0]
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fallback, err := os.Open(os.DevNull)
			require.NoError(t, err)
			t.Cleanup(func() { _ = fallback.Close() })

			fd := tc.fds(t)
			got := pollable(fd, "/dev/test-"+tc.name, fallback)
			f, ok := got.(*os.File)
			require.True(t, ok, "got %T", got)
			require.NotSame(t, fallback, f)
			assert.Equal(t, "/dev/test-"+tc.name, f.Name())

			flags, err := fcntlGetFlags(fd)
			require.NoError(t, err)
			require.NotZero(t, flags&syscall.O_NONBLOCK, "the descriptor must be non-blocking")

			// Through the poller, Close ends a Read blocked on a silent peer.
			done := make(chan error)
			go func() {
				_, err := f.Read(make([]byte, 1))
				done <- err
			}()
			require.NoError(t, f.Close())
			err = <-done
			require.ErrorIs(t, err, os.ErrClosed)
			require.NotErrorIs(t, err, io.EOF)
		})
	}
}

func fcntlGetFlags(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
