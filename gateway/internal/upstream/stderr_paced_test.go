package upstream

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPacedReaderWaitsOnlyAfterADrain: a read that did not fill its
// buffer (the pipe was drained) is followed by a wait of at most
// stderrPace before the next read; a read that filled it is not, and
// every byte comes through in order.
func TestPacedReaderWaitsOnlyAfterADrain(t *testing.T) {
	var waits []time.Duration
	src := bytes.Repeat([]byte("0123456789"), 3) // 30 bytes
	p := &pacedReader{r: iotest.HalfReader(bytes.NewReader(src)), sleep: func(d time.Duration) { waits = append(waits, d) }}

	full := make([]byte, 4)
	n, err := p.Read(full[:2]) // HalfReader reads 1 of 2: a drain
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Empty(t, waits, "the first read does not wait")

	n, err = p.Read(full[:2]) // after a drain: waits, then reads 1 of 2 again
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.Len(t, waits, 1, "a read after a drain waits")
	assert.Positive(t, waits[0])
	assert.LessOrEqual(t, waits[0], stderrPace)

	p.r = bytes.NewReader(src[2:]) // reads that fill their buffer
	p.drained = time.Time{}
	for range 3 {
		n, err = p.Read(full)
		require.NoError(t, err)
		assert.Equal(t, len(full), n)
	}
	assert.Len(t, waits, 1, "reads after full ones do not wait")

	rest, err := io.ReadAll(p)
	require.NoError(t, err)
	assert.Equal(t, src[2+3*len(full):], rest, "every byte comes through")
}
