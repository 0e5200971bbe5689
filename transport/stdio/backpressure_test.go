package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// backpressure is a Conn whose output nobody reads until the test does,
// and whose input holds pings 1 to 5.
type backpressure struct {
	t    *testing.T
	c    *stdio.Conn
	out  *bufio.Reader
	read chan transport.Message // what Read returned, one Read at a time
}

const queueCap = 256 // WithMaxQueuedBytes of newBackpressure

// newBackpressure returns a backpressure whose Conn takes opts, or
// WithMaxQueuedBytes(queueCap) without any.
func newBackpressure(t *testing.T, opts ...stdio.Option) *backpressure {
	if len(opts) == 0 {
		opts = []stdio.Option{stdio.WithMaxQueuedBytes(queueCap)}
	}
	var in strings.Builder
	for i := range 5 {
		in.WriteString(`{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"ping"}` + "\n")
	}
	outR, outW := io.Pipe()
	b := &backpressure{t: t, c: stdio.New(strings.NewReader(in.String()), outW, opts...), out: bufio.NewReader(outR), read: make(chan transport.Message, 1)}
	t.Cleanup(func() { _ = b.c.Close(); _ = outR.Close() })
	return b
}

// answer is a response of about size bytes.
func answer(id int64, size int) *transport.Response {
	return &transport.Response{ID: transport.Int64ID(id), Result: json.RawMessage(`{"pad":"` + strings.Repeat("p", size) + `"}`)}
}

// write starts a Write of msg with ctx and returns where its error goes.
func (b *backpressure) write(ctx context.Context, msg transport.Message) <-chan error {
	done := make(chan error, 1)
	go func() { done <- b.c.Write(ctx, msg) }()
	return done
}

// startRead starts one Read; its message arrives on b.read.
func (b *backpressure) startRead() {
	go func() {
		msg, err := b.c.Read(context.Background())
		assert.NoError(b.t, err)
		b.read <- msg
	}()
}

// reading reports whether the Read started last has returned, once every
// goroutine of the bubble is blocked.
func (b *backpressure) reading() bool {
	synctest.Wait()
	return len(b.read) == 1
}

func (b *backpressure) takeLine() string {
	line, err := b.out.ReadString('\n')
	require.NoError(b.t, err)
	return line
}

// Read waits while the Writes waiting for their turn hold more than
// WithMaxQueuedBytes, and reads on as soon as they are written; the one
// Write under way does not count, however large.
func TestReadWaitsForQueuedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackpressure(t)
		ctx := context.Background()
		first := b.write(ctx, answer(1, 4*queueCap)) // blocked in the output, nobody reads it
		synctest.Wait()
		b.startRead()
		require.True(t, b.reading(), "Read must not wait for the Write under way")
		<-b.read

		second := b.write(ctx, answer(2, queueCap)) // waits for its turn: over the cap
		synctest.Wait()
		b.startRead()
		require.False(t, b.reading(), "Read must wait while more than the cap waits to be written")

		assert.Contains(t, b.takeLine(), `"id":1`)
		require.NoError(t, <-first)
		require.True(t, b.reading(), "Read must go on once the queue is taken")
		assert.Equal(t, transport.Int64ID(2), (<-b.read).(*transport.Request).ID)
		assert.Contains(t, b.takeLine(), `"id":2`)
		require.NoError(t, <-second)
	})
}

// Each message waiting counts for what its writer holds besides it: with
// the default of 8 MiB, 1,000 small answers waiting do not hold Read back,
// 1,024 do.
func TestReadWaitsForManySmallWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackpressure(t, nil) // the default
		ctx := context.Background()
		writes := []<-chan error{b.write(ctx, answer(1, 8))}
		synctest.Wait()
		queue := func(n int) {
			for range n {
				writes = append(writes, b.write(ctx, answer(int64(1+len(writes)), 8)))
			}
			synctest.Wait()
		}
		queue(1000)
		b.startRead()
		require.True(t, b.reading(), "Read must not wait for 1,000 small answers")
		<-b.read

		queue(24)
		b.startRead()
		require.False(t, b.reading(), "Read must wait for 1,024 small answers")
		for range writes {
			b.takeLine()
		}
		for _, w := range writes {
			require.NoError(t, <-w)
		}
		require.True(t, b.reading())
		<-b.read
	})
}

// A Write that gives up waiting for its turn (its ctx ends: the server's
// write timeout) turns Read's wait off for good: the peer is taken to be
// gone, and what it sends is read (and dropped by the server).
func TestReadStopsWaitingOnceAWriteGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackpressure(t)
		first := b.write(context.Background(), answer(1, 8))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		second := b.write(ctx, answer(2, queueCap))
		synctest.Wait()
		b.startRead()
		require.False(t, b.reading())

		time.Sleep(time.Second)
		require.ErrorIs(t, <-second, context.DeadlineExceeded)
		require.True(t, b.reading(), "Read must go on once a Write gave up")
		<-b.read

		third := b.write(context.Background(), answer(3, queueCap))
		synctest.Wait()
		b.startRead()
		require.True(t, b.reading(), "Read must not wait again after a Write gave up")
		<-b.read

		assert.Contains(t, b.takeLine(), `"id":1`)
		assert.Contains(t, b.takeLine(), `"id":3`)
		require.NoError(t, <-first)
		require.NoError(t, <-third)
	})
}

// Close ends a Read that waits for the queue.
func TestCloseEndsAReadWaitingForTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackpressure(t)
		first := b.write(context.Background(), answer(1, 8))
		synctest.Wait()
		second := b.write(context.Background(), answer(2, queueCap))
		synctest.Wait()
		read := make(chan error, 1)
		go func() {
			_, err := b.c.Read(context.Background())
			read <- err
		}()
		synctest.Wait()
		require.Empty(t, read)

		require.NoError(t, b.c.Close())
		require.ErrorIs(t, <-read, transport.ErrClosed)
		require.ErrorIs(t, <-first, transport.ErrClosed)
		require.ErrorIs(t, <-second, transport.ErrClosed)
	})
}
