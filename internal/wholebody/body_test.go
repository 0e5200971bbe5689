package wholebody_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wholebody"
)

// closeCounter is a body that counts its closes.
type closeCounter struct{ closes int }

func (c *closeCounter) Close() error { c.closes++; return nil }

// A Body is whole until someone reads from it, reads as its data, and
// closes the body it came from.
func TestBodyUnreadUntilRead(t *testing.T) {
	orig := &closeCounter{}
	b := wholebody.New([]byte("hello"), orig)
	data, unread := b.Unread()
	assert.True(t, unread)
	assert.Equal(t, "hello", string(data))

	var first [2]byte
	_, err := b.Read(first[:])
	require.NoError(t, err)
	_, unread = b.Unread()
	assert.False(t, unread, "read from: no longer the whole body")
	rest, err := io.ReadAll(b)
	require.NoError(t, err)
	assert.Equal(t, "llo", string(rest))

	require.NoError(t, b.Close())
	assert.Equal(t, 1, orig.closes)
	assert.NoError(t, wholebody.New(nil, nil).Close(), "no body to close")
}
