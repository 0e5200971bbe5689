package overload

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/connstate"
)

// A TCP connection's socket tells how long ago it last received data; a
// connection without a socket, or a context without a connection, tells
// nothing.
func TestSocketIdle(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer func() { _ = client.Close() }()
	server, err := ln.Accept()
	require.NoError(t, err)
	defer func() { _ = server.Close() }()
	_, err = client.Write([]byte("request"))
	require.NoError(t, err)
	_, err = io.ReadFull(server, make([]byte, len("request")))
	require.NoError(t, err)

	d, ok := connQueued(connstate.With(context.Background(), server))
	require.True(t, ok, "TCP_INFO on a TCP socket")
	assert.GreaterOrEqual(t, d, time.Duration(0))
	assert.Less(t, d, time.Minute)

	_, ok = connQueued(context.Background())
	assert.False(t, ok, "no connection")
	a, b := net.Pipe()
	defer func() { _ = a.Close() }()
	defer func() { _ = b.Close() }()
	_, ok = connQueued(connstate.With(context.Background(), a))
	assert.False(t, ok, "no socket")
}
