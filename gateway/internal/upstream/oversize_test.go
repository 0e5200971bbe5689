package upstream_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// openBounded opens a session over a stdio pipe pair whose session side
// reads messages of at most limit bytes, as a process's does; the
// upstream's side writes raw lines.
func openBounded(t *testing.T, limit int) (*upstream.Session, *fake, io.Writer) {
	t.Helper()
	upR, sessW := io.Pipe()
	sessR, upW := io.Pipe()
	conn := stdio.New(sessR, sessW, stdio.WithMaxFrameSize(limit), stdio.WithOversizeFrames(upstream.OversizeLine(limit)))
	peer := stdio.New(upR, upW)
	s, f := openOn(t, conn, peer, upstream.Config{Name: "u"})
	t.Cleanup(func() {
		_ = s.Close()
		_ = peer.Close()
	})
	return s, f, upW
}

// writeLine writes line and a newline in a goroutine (the session reads
// it while the test waits for what it makes of it).
func writeLine(t *testing.T, w io.Writer, line string) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.WriteString(w, line+"\n") })
	return &wg
}

// TestOversizeAnswerFailsOnlyItsCall: over stdio, an answer over the
// bound fails its own call with a TooLargeError, whether its id comes
// before its result or last (as the TypeScript SDK writes it); the
// session lives on, the next call is answered, and each is counted. An
// oversize notification is dropped, an oversize request of the upstream
// refused, both counted, the session living on.
func TestOversizeAnswerFailsOnlyItsCall(t *testing.T) {
	testkit.Watchdog(t)
	const limit = 1 << 10
	big := strings.Repeat("x", 64<<10)
	s, f, w := openBounded(t, limit)
	for i, line := range []func(id string) string{
		func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{"text":"` + big + `"}}` },
		func(id string) string {
			return `{"result":{"text":"` + big + `","x":{"id":9}},"jsonrpc":"2.0","id":` + id + `}`
		},
		func(id string) string { return `{"result":{"text":"` + big + `"},"id":` + id + `,"jsonrpc":"2.0"}` },
	} {
		got := callAsync(t.Context(), s, "tools/call", nil)
		req := f.request("tools/call")
		wg := writeLine(t, w, line(req.ID.String()))
		r := <-got
		wg.Wait()
		tooLarge, ok := errors.AsType[*upstream.TooLargeError](r.err)
		require.True(t, ok, "case %d: %v", i, r.err)
		assert.Equal(t, limit, tooLarge.Max)
		assert.Greater(t, tooLarge.Size, int64(64<<10))
		require.ErrorIs(t, r.err, transport.ErrFrameTooLarge)
		require.NoError(t, s.Err(), "case %d: the session lives on", i)

		got = callAsync(t.Context(), s, "tools/call", nil)
		f.answer(f.request("tools/call").ID, `{"ok":true}`)
		r = <-got
		require.NoError(t, r.err)
		assert.JSONEq(t, `{"ok":true}`, string(r.raw))
	}

	wg := writeLine(t, w, `{"method":"notifications/message","params":{"level":"info","data":"`+big+`"},"jsonrpc":"2.0"}`)
	wg.Wait()
	wg = writeLine(t, w, `{"method":"sampling/createMessage","params":{"x":"`+big+`"},"jsonrpc":"2.0","id":"up-1"}`)
	refusal := f.response()
	wg.Wait()
	assert.Equal(t, "up-1", refusal.ID.String())
	require.NotNil(t, refusal.Error)
	assert.Equal(t, int64(protocol.CodeInvalidRequest), refusal.Error.Code)
	assert.Contains(t, refusal.Error.Message, "1024 bytes")
	require.NoError(t, s.Err())
	assert.Equal(t, int64(5), s.Stats().OversizeMessages)
	assert.Zero(t, s.Stats().InvalidMessages)
}

// TestOversizeAnswerOfNoCallEndsTheSession: an answer over the bound
// whose id shows neither before its result nor at its end cannot be
// told to be any call's: the session ends with ErrGone wrapping
// ErrFrameTooLarge, as every frame over the bound once did.
func TestOversizeAnswerOfNoCallEndsTheSession(t *testing.T) {
	testkit.Watchdog(t)
	s, f, w := openBounded(t, 1<<10)
	got := callAsync(t.Context(), s, "tools/call", nil)
	req := f.request("tools/call")
	wg := writeLine(t, w, `{"result":{"text":"`+strings.Repeat("x", 4<<10)+`"},"id":`+req.ID.String()+`,"extra":1}`)
	r := <-got
	wg.Wait()
	require.ErrorIs(t, r.err, upstream.ErrGone)
	require.ErrorIs(t, r.err, transport.ErrFrameTooLarge)
}

// TestOversizeLine: what a process's stdout Conn makes of a line over the
// bound, from its first and last bytes.
func TestOversizeLine(t *testing.T) {
	f := upstream.OversizeLine(100)
	for _, tc := range []struct {
		name, head, tail string
		response         bool
		id               string // "" for none
		terminal         bool
	}{
		{name: "id first", head: `{"jsonrpc":"2.0","id":7,"result":{"a":"xx`, response: true, id: "7"},
		{name: "id last", head: `{"result":{"a":"xx`, tail: `xx"}},"jsonrpc":"2.0","id":7}`, response: true, id: "7"},
		{name: "id then jsonrpc last", head: `{"result":{`, tail: `"},"id":7,"jsonrpc":"2.0"}` + "\r", response: true, id: "7"},
		{name: "nested id last", head: `{"result":{`, tail: `x","y":{"id":7}}}`, terminal: true},
		{name: "id in a string", head: `{"result":{`, tail: `x":"a,\"id\":7}"}`, terminal: true},
		{name: "error", head: `{"id":"s-1","error":{"code":1,"message":"xx`, response: true, id: "s-1"},
		{name: "notification", head: `{"method":"notifications/message","params":{"data":"xx`, tail: `xx"},"jsonrpc":"2.0"}`},
		{name: "request", head: `{"method":"sampling/createMessage","params":{`, tail: `"}},"jsonrpc":"2.0","id":3}`, id: "3"},
		{name: "not an object", head: `["xx`, terminal: true},
		{name: "nothing known", head: `{"jsonrpc":"2.0","other":"xx`, tail: `"id":3}`, terminal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := f([]byte(tc.head), []byte(tc.tail), 5000)
			require.Nil(t, m)
			require.ErrorIs(t, err, transport.ErrFrameTooLarge)
			derr, ok := errors.AsType[*transport.DecodeError](err)
			if tc.terminal {
				assert.False(t, ok, "the session ends: %v", err)
				return
			}
			require.True(t, ok, "%v", err)
			if tc.id == "" {
				assert.False(t, derr.ID.IsValid())
			} else {
				assert.Equal(t, tc.id, derr.ID.String())
			}
			assert.Equal(t, tc.response, upstream.OversizeResponse(derr), "a response, which fails its call")
		})
	}
}

// TestCallNotesBoundedInBytes: while a call's caller is behind, its log
// messages are held up to 1 MiB of params (not 32 messages of any
// size); the rest are dropped and counted, and the caller gets those
// held, then the result.
func TestCallNotesBoundedInBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := open(t, upstream.Config{Name: "u"})
		release := make(chan struct{})
		delivered := 0
		out := make(chan result, 1)
		go func() {
			raw, err := s.Call(t.Context(), "tools/call", nil, &upstream.Notes{Log: func(json.RawMessage) {
				<-release
				delivered++
			}})
			out <- result{raw, err}
		}()
		req := f.request("tools/call")
		const sent = 32
		data := strings.Repeat("l", 300<<10)
		for range sent {
			f.notify("notifications/message", `{"level":"info","data":"`+data+`"}`)
		}
		f.answer(req.ID, `{"done":true}`)
		synctest.Wait()
		close(release)
		r := <-out
		require.NoError(t, r.err)
		assert.JSONEq(t, `{"done":true}`, string(r.raw))
		// Three of 300 KiB held, and one in the caller's hands at most.
		assert.LessOrEqual(t, delivered, 4, "the call holds 1 MiB of them")
		assert.GreaterOrEqual(t, delivered, 3)
		assert.Equal(t, int64(sent-delivered), s.Stats().DroppedNotifications)
	})
}
