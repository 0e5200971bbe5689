package transport_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

func TestWrapIOErrorNil(t *testing.T) {
	t.Parallel()
	require.NoError(t, transport.WrapIOError("read", false, nil))
	require.NoError(t, transport.WrapIOError("write", true, nil))
}

func TestWrapIOErrorClassifies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		op            string
		closedLocally bool
		err           error
		class         error
		wantMsg       string // empty: not checked
	}{
		{name: "EOF", op: "read", err: io.EOF, class: transport.ErrPeerGone, wantMsg: "read: transport: peer gone: EOF"},
		{name: "unexpected EOF", op: "read", err: io.ErrUnexpectedEOF, class: transport.ErrPeerGone},
		{name: "EPIPE", op: "write", err: syscall.EPIPE, class: transport.ErrPeerGone},
		{
			name: "EPIPE in a PathError", op: "write",
			err:   &fs.PathError{Op: "write", Path: "|1", Err: syscall.EPIPE},
			class: transport.ErrPeerGone,
		},
		{name: "ECONNRESET", op: "read", err: syscall.ECONNRESET, class: transport.ErrPeerGone},
		{
			name: "ECONNRESET in an OpError", op: "read",
			err:   &net.OpError{Op: "read", Net: "unix", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
			class: transport.ErrPeerGone,
		},
		{name: "closed pipe", op: "write", err: io.ErrClosedPipe, class: transport.ErrPeerGone},
		{name: "unknown error", op: "read", err: errors.New("boom"), class: transport.ErrPeerGone, wantMsg: "read: transport: peer gone: boom"},
		{name: "os.ErrClosed", op: "read", err: os.ErrClosed, class: transport.ErrClosed},
		{
			name: "os.ErrClosed in a PathError", op: "read",
			err:   &fs.PathError{Op: "read", Path: "|0", Err: os.ErrClosed},
			class: transport.ErrClosed,
		},
		{name: "net.ErrClosed", op: "write", err: net.ErrClosed, class: transport.ErrClosed},
		{
			name: "closed locally wins over EOF", op: "read", closedLocally: true,
			err: io.EOF, class: transport.ErrClosed, wantMsg: "read: transport: closed: EOF",
		},
		{name: "closed locally wins over EPIPE", op: "write", closedLocally: true, err: syscall.EPIPE, class: transport.ErrClosed},
		{name: "closed locally wins over a closed pipe", op: "read", closedLocally: true, err: io.ErrClosedPipe, class: transport.ErrClosed},
		{name: "closed locally with os.ErrClosed", op: "read", closedLocally: true, err: os.ErrClosed, class: transport.ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := transport.WrapIOError(tc.op, tc.closedLocally, tc.err)
			require.Error(t, got)
			require.ErrorIs(t, got, tc.class)
			require.ErrorIs(t, got, tc.err, "the original error must stay reachable")
			other := transport.ErrClosed
			if errors.Is(tc.class, transport.ErrClosed) {
				other = transport.ErrPeerGone
			}
			require.NotErrorIs(t, got, other, "exactly one class")
			assert.Equal(t, fmt.Sprintf("%s: %v: %v", tc.op, tc.class, tc.err), got.Error())
			if tc.wantMsg != "" {
				assert.Equal(t, tc.wantMsg, got.Error())
			}
		})
	}
}

func TestWrapIOErrorKeepsClassifiedErrors(t *testing.T) {
	t.Parallel()
	peerGone := fmt.Errorf("memory: read: %w: %w", transport.ErrPeerGone, io.EOF)
	closed := fmt.Errorf("stdio: write: %w", transport.ErrClosed)
	tests := []struct {
		name          string
		closedLocally bool
		err           error
	}{
		{name: "bare ErrPeerGone", err: transport.ErrPeerGone},
		{name: "bare ErrClosed", closedLocally: true, err: transport.ErrClosed},
		{name: "wrapped ErrPeerGone", err: peerGone},
		{name: "wrapped ErrPeerGone, closed locally", closedLocally: true, err: peerGone},
		{name: "wrapped ErrClosed", err: closed},
		{name: "wrapped ErrClosed, closed locally", closedLocally: true, err: closed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := transport.WrapIOError("read", tc.closedLocally, tc.err)
			assert.Same(t, tc.err, got) // the very same error value
		})
	}
}
