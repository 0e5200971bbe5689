package wholebody_test

import (
	"bytes"
	"io"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wholebody"
)

// bufferWatcher yields its data, then EOF, and records the largest buffer
// a ReadFull into a prefix-filled buffer can have asked it to fill: the
// bytes it had sent plus the room it was offered.
type bufferWatcher struct {
	data    []byte
	sent    int
	largest int
}

func (w *bufferWatcher) Read(p []byte) (int, error) {
	w.largest = max(w.largest, w.sent+len(p))
	if w.sent == len(w.data) {
		return 0, io.EOF
	}
	n := copy(p, w.data[w.sent:])
	w.sent += n
	return n, nil
}

// ReadDeclared returns exactly the declared bytes, whatever the length,
// and nothing of what follows them.
func TestReadDeclaredReadsExactly(t *testing.T) {
	for _, n := range []int{0, 1, 100, 64 << 10, 64<<10 + 1, 300 << 10, 1 << 20, 4<<20 + 3} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte('a' + i%26)
		}
		got, err := wholebody.ReadDeclared(io.MultiReader(bytes.NewReader(data), bytes.NewReader([]byte("more"))), int64(n))
		require.NoError(t, err, n)
		require.Len(t, got, n)
		assert.True(t, bytes.Equal(data, got), "the bytes of a body of %d", n)
	}
}

// A body that ends before its declared length is an error, and while it
// comes the buffer is at most 32 times what arrived (64 KiB at first): a
// client that declares 4 MiB and sends 1 KiB costs 64 KiB, not 4 MiB.
func TestReadDeclaredShortBody(t *testing.T) {
	for _, sent := range []int{0, 1 << 10, 64 << 10, 100 << 10, 600 << 10} {
		w := &bufferWatcher{data: make([]byte, sent)}
		_, err := wholebody.ReadDeclared(w, 4<<20)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, sent)
		assert.LessOrEqual(t, w.largest, max(64<<10, 32*sent), "buffer for %d bytes sent of 4 MiB declared", sent)
	}
	_, err := wholebody.ReadDeclared(bytes.NewReader(nil), -1)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "a negative length is no length")
}

// A body of a little over 1 MiB (as a 1 MiB argument's request is)
// allocates what it returns and the 64 KiB it started with, nothing
// more: no doubling steps (io.ReadAll's would allocate about twice the
// body).
func TestReadDeclaredAllocatesOnce(t *testing.T) {
	const n = 1<<20 + 200
	data := make([]byte, n)
	allocated := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	r := bytes.NewReader(data)
	read := func() uint64 {
		r.Reset(data)
		metrics.Read(allocated)
		before := allocated[0].Value.Uint64()
		got, err := wholebody.ReadDeclared(r, n)
		metrics.Read(allocated)
		require.NoError(t, err)
		require.Len(t, got, n)
		return allocated[0].Value.Uint64() - before
	}
	read() // the test's own first allocations
	assert.LessOrEqual(t, read(), uint64(n+192<<10), "the body and the 64 KiB start (and room for page rounding and the test's own allocations)")
	assert.InDelta(t, 2.0, testing.AllocsPerRun(5, func() {
		r.Reset(data)
		_, _ = wholebody.ReadDeclared(r, n)
	}), 0, "the 64 KiB start and the 1 MiB body")
}
