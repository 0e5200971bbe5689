package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

type readResult struct {
	msg transport.Message
	err error
}

func goRead(ctx context.Context, c *memory.Conn) <-chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		msg, err := c.Read(ctx)
		ch <- readResult{msg, err}
	}()
	return ch
}

func goWrite(ctx context.Context, c *memory.Conn, msg transport.Message) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Write(ctx, msg) }()
	return ch
}

// requireBlocked fails if ch already delivered. Call it after synctest.Wait,
// which guarantees that the goroutine behind ch is durably blocked or done.
func requireBlocked[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s returned before it should have: %v", what, v)
	default:
	}
}

func req(id int64, method string) *transport.Request {
	return &transport.Request{ID: transport.Int64ID(id), Method: method}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  transport.Message
		want transport.Message // nil: msg itself
	}{
		{name: "request", msg: &transport.Request{ID: transport.Int64ID(1), Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)}},
		{name: "string id request", msg: &transport.Request{ID: transport.StringID("é\n"), Method: "m", Params: json.RawMessage(`[1]`)}},
		{name: "notification", msg: &transport.Request{Method: "notifications/initialized"}},
		{name: "indented params cross unchanged", msg: &transport.Request{Method: "n", Params: json.RawMessage("{\n  \"a\": 1\n}")}},
		{name: "response", msg: &transport.Response{ID: transport.Int64ID(2), Result: json.RawMessage(`{"ok":true}`)}},
		{
			name: "error response with data",
			msg: &transport.Response{ID: transport.StringID("e"), Error: &transport.Error{
				Code: -32602, Message: "bad \"params\"", Data: json.RawMessage(`{"field":"x"}`),
			}},
		},
		{name: "id-less error response", msg: &transport.Response{Error: &transport.Error{Code: -32700, Message: "parse error"}}},
		{
			name: "response batch arrives as a batch",
			msg: transport.ResponseBatch{
				{ID: transport.Int64ID(1), Result: json.RawMessage(`1`)},
				{ID: transport.Int64ID(2), Error: &transport.Error{Code: 1, Message: "x"}},
			},
			want: transport.Batch{
				json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":1}`),
				json.RawMessage(`{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}`),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				a, b := memory.NewPair()
				want := tc.want
				if want == nil {
					want = tc.msg
				}
				for _, dir := range []struct {
					name     string
					from, to *memory.Conn
				}{{"a to b", a, b}, {"b to a", b, a}} {
					written := goWrite(t.Context(), dir.from, tc.msg)
					got, err := dir.to.Read(t.Context())
					require.NoError(t, err, dir.name)
					assert.Equal(t, want, got, dir.name)
					require.NoError(t, <-written, dir.name)
				}
				require.NoError(t, a.Close())
				require.NoError(t, b.Close())
			})
		})
	}
}

func TestMessagesArriveInOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a, b := memory.NewPair()
		const n = 100
		errs := make(chan error, 1)
		go func() {
			for i := range n {
				if err := a.Write(t.Context(), req(int64(i), "seq")); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
		for i := range n {
			got, err := b.Read(t.Context())
			require.NoError(t, err)
			assert.Equal(t, req(int64(i), "seq"), got)
		}
		require.NoError(t, <-errs)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
}

func TestWriteBlocksUntilPeerReads(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a, b := memory.NewPair()
		written := goWrite(t.Context(), a, req(1, "m"))
		synctest.Wait()
		requireBlocked(t, written, "Write with no reader")

		got, err := b.Read(t.Context())
		require.NoError(t, err)
		assert.Equal(t, req(1, "m"), got)
		synctest.Wait()
		select {
		case err := <-written:
			require.NoError(t, err)
		default:
			t.Fatal("Write still blocked after the peer read")
		}
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
}

func TestReadBlocksUntilPeerWrites(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a, b := memory.NewPair()
		read := goRead(t.Context(), b)
		synctest.Wait()
		requireBlocked(t, read, "Read with no writer")

		require.NoError(t, a.Write(t.Context(), req(2, "m")))
		res := <-read
		require.NoError(t, res.err)
		assert.Equal(t, req(2, "m"), res.msg)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
}

func TestClose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// order lists the ends to close, "a" or "b"; the test watches a.
		order []string
		// blocked is the class of a's calls pending at the first close,
		// later the class of a's calls after every close.
		blocked, later error
	}{
		{name: "this end closed", order: []string{"a"}, blocked: transport.ErrClosed, later: transport.ErrClosed},
		{name: "peer closed", order: []string{"b"}, blocked: transport.ErrPeerGone, later: transport.ErrPeerGone},
		{name: "this end then peer", order: []string{"a", "b"}, blocked: transport.ErrClosed, later: transport.ErrClosed},
		{name: "peer then this end", order: []string{"b", "a"}, blocked: transport.ErrPeerGone, later: transport.ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				a, b := memory.NewPair()
				ends := map[string]*memory.Conn{"a": a, "b": b}

				// a's Read waits for b to write, a's Write for b to read.
				read := goRead(t.Context(), a)
				written := goWrite(t.Context(), a, req(1, "m"))
				synctest.Wait()
				requireBlocked(t, read, "Read")
				requireBlocked(t, written, "Write")

				for _, end := range tc.order {
					require.NoError(t, ends[end].Close())
					synctest.Wait()
				}
				res := <-read
				assert.Nil(t, res.msg)
				requireClass(t, "read", tc.blocked, res.err)
				requireClass(t, "write", tc.blocked, <-written)

				// Later calls fail with the current class, and keep failing.
				for range 2 {
					msg, err := a.Read(t.Context())
					assert.Nil(t, msg)
					requireClass(t, "read", tc.later, err)
					requireClass(t, "write", tc.later, a.Write(t.Context(), req(2, "m")))
					requireClass(t, "write", tc.later, a.WriteFrame(t.Context(), []byte(`{}`)))
				}

				// Close is idempotent and always succeeds.
				require.NoError(t, a.Close())
				require.NoError(t, a.Close())
				require.NoError(t, b.Close())
			})
		})
	}
}

// requireClass checks that err, from a read or write, wraps class and only
// class, with the memory transport's exact wording.
func requireClass(t *testing.T, op string, class, err error) {
	t.Helper()
	require.ErrorIs(t, err, class)
	switch {
	case errors.Is(class, transport.ErrClosed):
		require.NotErrorIs(t, err, transport.ErrPeerGone)
		assert.Equal(t, "memory: "+op+": transport: closed", err.Error())
	case op == "read":
		require.NotErrorIs(t, err, transport.ErrClosed)
		require.ErrorIs(t, err, io.EOF)
		assert.Equal(t, "memory: read: transport: peer gone: EOF", err.Error())
	default:
		require.NotErrorIs(t, err, transport.ErrClosed)
		require.ErrorIs(t, err, io.ErrClosedPipe)
		assert.Equal(t, "memory: write: transport: peer gone: io: read/write on closed pipe", err.Error())
	}
}

func TestCloseWinsOverCancelledContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a, b := memory.NewPair()
		require.NoError(t, a.Close())
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := a.Read(ctx)
		require.ErrorIs(t, err, transport.ErrClosed)
		require.ErrorIs(t, a.Write(ctx, req(1, "m")), transport.ErrClosed)
		require.ErrorIs(t, b.Write(ctx, req(1, "m")), transport.ErrPeerGone)
		require.NoError(t, b.Close())
	})
}

func TestWriteFrameGarbage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frame string
		code  protocol.Code
		id    transport.ID
	}{
		{name: "not JSON", frame: "garbage", code: protocol.CodeParseError},
		{name: "empty frame", frame: "", code: protocol.CodeParseError},
		{name: "invalid UTF-8", frame: "\xff\xfe", code: protocol.CodeParseError},
		{name: "wrong version", frame: `{"jsonrpc":"1.0","id":3,"method":"m"}`, code: protocol.CodeInvalidRequest, id: transport.Int64ID(3)},
		{name: "empty batch", frame: `[]`, code: protocol.CodeInvalidRequest},
		{name: "not an object", frame: `42`, code: protocol.CodeInvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				a, b := memory.NewPair()
				sent := make(chan error, 1)
				go func() { sent <- a.WriteFrame(t.Context(), []byte(tc.frame)) }()
				msg, err := b.Read(t.Context())
				assert.Nil(t, msg)
				de, ok := errors.AsType[*transport.DecodeError](err)
				require.True(t, ok, "%v is %T, not a *DecodeError", err, err)
				assert.Equal(t, tc.code, de.Code)
				assert.Equal(t, tc.id, de.ID)
				require.NoError(t, <-sent)

				// The pair is still usable both ways.
				written := goWrite(t.Context(), a, req(4, "after"))
				got, err := b.Read(t.Context())
				require.NoError(t, err)
				assert.Equal(t, req(4, "after"), got)
				require.NoError(t, <-written)
				written = goWrite(t.Context(), b, req(5, "back"))
				got, err = a.Read(t.Context())
				require.NoError(t, err)
				assert.Equal(t, req(5, "back"), got)
				require.NoError(t, <-written)

				require.NoError(t, a.Close())
				require.NoError(t, b.Close())
			})
		})
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// start begins a blocked call on a; its error arrives on the channel.
		start func(ctx context.Context, a *memory.Conn) <-chan error
	}{
		{
			name: "read",
			start: func(ctx context.Context, a *memory.Conn) <-chan error {
				ch := make(chan error, 1)
				go func() {
					msg, err := a.Read(ctx)
					if msg != nil {
						err = fmt.Errorf("unexpected message %v (err %w)", msg, err)
					}
					ch <- err
				}()
				return ch
			},
		},
		{
			name: "write",
			start: func(ctx context.Context, a *memory.Conn) <-chan error {
				return goWrite(ctx, a, req(1, "cancelled"))
			},
		},
		{
			name: "write frame",
			start: func(ctx context.Context, a *memory.Conn) <-chan error {
				ch := make(chan error, 1)
				go func() { ch <- a.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"cancelled"}`)) }()
				return ch
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/while blocked", func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				a, b := memory.NewPair()
				cause := errors.New("request cancelled")
				ctx, cancel := context.WithCancelCause(t.Context())
				done := tc.start(ctx, a)
				synctest.Wait()
				requireBlocked(t, done, tc.name)
				cancel(cause)
				err := <-done
				require.ErrorIs(t, err, cause)
				require.NotErrorIs(t, err, transport.ErrClosed)
				require.NotErrorIs(t, err, transport.ErrPeerGone)
				requireUsable(t, a, b)
			})
		})
		t.Run(tc.name+"/already cancelled", func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				a, b := memory.NewPair()
				cause := errors.New("too late")
				ctx, cancel := context.WithCancelCause(t.Context())
				cancel(cause)
				require.ErrorIs(t, <-tc.start(ctx, a), cause)
				requireUsable(t, a, b)
			})
		})
		t.Run(tc.name+"/deadline", func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				a, b := memory.NewPair()
				start := time.Now()
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				defer cancel()
				err := <-tc.start(ctx, a)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Equal(t, 3*time.Second, time.Since(start), "the call returned at its deadline")
				requireUsable(t, a, b)
			})
		})
	}
}

// requireUsable checks that a cancelled call left nothing behind: a fresh
// message crosses in each direction, and a cancelled write never arrives.
// It closes both ends.
func requireUsable(t *testing.T, a, b *memory.Conn) {
	t.Helper()
	written := goWrite(t.Context(), a, req(10, "fresh"))
	got, err := b.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, req(10, "fresh"), got)
	require.NoError(t, <-written)

	written = goWrite(t.Context(), b, req(11, "reply"))
	got, err = a.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, req(11, "reply"), got)
	require.NoError(t, <-written)

	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
}

func TestWriteEncodeErrorSendsNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a, b := memory.NewPair()
		read := goRead(t.Context(), b)
		require.EqualError(t, a.Write(t.Context(), transport.ResponseBatch{}), "transport: empty response batch")
		require.EqualError(t, a.Write(t.Context(), transport.Batch{json.RawMessage(`{}`)}), "transport: cannot encode transport.Batch")
		synctest.Wait()
		requireBlocked(t, read, "Read after failed writes")

		require.NoError(t, a.Write(t.Context(), req(3, "good")))
		res := <-read
		require.NoError(t, res.err)
		assert.Equal(t, req(3, "good"), res.msg)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
}

func TestWriteConcurrency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const writers, perWriter = 10, 20
		a, b := memory.NewPair()
		errs := make(chan error, writers*perWriter)
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				for i := range perWriter {
					errs <- a.Write(t.Context(), req(int64(g*perWriter+i), "concurrent"))
				}
			})
		}
		last := make(map[int]int) // writer -> last sequence number seen
		for range writers * perWriter {
			msg, err := b.Read(t.Context())
			require.NoError(t, err)
			r, ok := msg.(*transport.Request)
			require.True(t, ok)
			var id int
			require.NoError(t, json.Unmarshal([]byte(r.ID.String()), &id))
			g, i := id/perWriter, id%perWriter
			prev, seen := last[g]
			if seen {
				assert.Greater(t, i, prev, "writer %d's messages arrive in its order", g)
			}
			last[g] = i
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, last, writers)
		for g, i := range last {
			assert.Equal(t, perWriter-1, i, "writer %d", g)
		}
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
}
