package connstate_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/connstate"
)

// A connection's value is made once, from the connection, and kept.
func TestValueMadeOnce(t *testing.T) {
	a, b := net.Pipe()
	defer func() { _ = a.Close(); _ = b.Close() }()
	assert.Nil(t, connstate.From(context.Background()))
	st := connstate.From(connstate.With(context.Background(), a))
	require.NotNil(t, st)
	assert.Equal(t, a, st.Conn())
	made := 0
	create := func(c net.Conn) any {
		made++
		assert.Equal(t, a, c)
		return new(int)
	}
	type key struct{}
	first := st.Value(key{}, create)
	assert.Same(t, first, st.Value(key{}, create))
	assert.Equal(t, 1, made)
	type other struct{}
	assert.NotSame(t, first, st.Value(other{}, create))
	assert.Equal(t, 2, made)
}
