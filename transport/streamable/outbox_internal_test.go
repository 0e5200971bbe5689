package streamable

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// queuedStream is a standalone GET stream, started, writing to a recorder,
// whose cuts land in cuts.
func queuedStream(t *testing.T) (*stream, *httptest.ResponseRecorder, *[]StreamCut) {
	t.Helper()
	var cuts []StreamCut
	w := httptest.NewRecorder()
	st := newStandalone(w, nil, &writeLimit{cut: func(c StreamCut) { cuts = append(cuts, c) }})
	st.mu.Lock()
	require.NoError(t, st.startSSE())
	st.mu.Unlock()
	return st, w, &cuts
}

// TestOutboxWritesInOrder: queued messages are written in the order they
// came, as SSE events, a frozen message as its encoding, and a write wakes
// the writer once however many messages wait.
func TestOutboxWritesInOrder(t *testing.T) {
	st, w, cuts := queuedStream(t)
	frozen := &transport.Request{Method: "notifications/tools/list_changed"}
	require.NoError(t, frozen.Freeze())
	for _, m := range []transport.Message{
		&transport.Request{Method: "notifications/message", Params: json.RawMessage(`{"n":1}`)},
		frozen,
		&transport.Request{ID: transport.Int64ID(7), Method: "ping"},
	} {
		require.NoError(t, st.deliver(m))
	}
	assert.Empty(t, w.Body.String(), "nothing is written by the poster")
	require.Len(t, st.out.wake, 1, "one wake for the lot")
	<-st.out.wake
	require.NoError(t, st.writeQueued())
	assert.Equal(t, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":1}}\n\n"+
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"+
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n\n", w.Body.String())
	assert.Empty(t, *cuts)
	require.NoError(t, st.writeQueued(), "an empty queue writes nothing")
	assert.Equal(t, 3, strings.Count(w.Body.String(), "event: message"))
}

// TestOutboxBacklogCutsTheStream: a client that does not take its events
// has its stream cut once the queue is over its bound, in messages or in
// bytes, counted once as CutBacklog; later writes fail as ErrStreamGone
// (the session's other streams are not concerned).
func TestOutboxBacklogCutsTheStream(t *testing.T) {
	n := &transport.Request{Method: "notifications/message", Params: json.RawMessage(`{}`)}
	t.Run("messages", func(t *testing.T) {
		st, w, cuts := queuedStream(t)
		for range maxOutboxMessages {
			require.NoError(t, st.deliver(n))
		}
		err := st.deliver(n)
		require.ErrorIs(t, err, transport.ErrStreamGone)
		require.ErrorIs(t, st.deliver(n), transport.ErrStreamGone, "refused from then on")
		require.ErrorIs(t, st.writeQueued(), transport.ErrStreamGone)
		assert.Equal(t, []StreamCut{CutBacklog}, *cuts)
		assert.NotContains(t, w.Body.String(), "notifications/message", "a cut stream writes nothing more")
	})
	t.Run("bytes", func(t *testing.T) {
		st, _, cuts := queuedStream(t)
		big := &transport.Request{Method: "notifications/message", Params: json.RawMessage(`"` + strings.Repeat("x", maxOutboxBytes) + `"`)}
		require.NoError(t, st.deliver(big), "one message over the bound is taken into an empty queue")
		require.ErrorIs(t, st.deliver(n), transport.ErrStreamGone)
		require.ErrorIs(t, st.writeQueued(), transport.ErrStreamGone)
		assert.Equal(t, []StreamCut{CutBacklog}, *cuts)
	})
	t.Run("drained in time", func(t *testing.T) {
		st, w, cuts := queuedStream(t)
		for range 3 * maxOutboxMessages {
			require.NoError(t, st.deliver(n))
			if len(st.out.queue) == maxOutboxMessages {
				require.NoError(t, st.writeQueued())
			}
		}
		require.NoError(t, st.writeQueued())
		assert.Empty(t, *cuts)
		assert.Equal(t, 3*maxOutboxMessages, bytes.Count(w.Body.Bytes(), []byte("notifications/message")))
	})
}

// TestOutboxClosed: once the stream's goroutine left, a write fails as
// ErrStreamGone and what was queued is let go.
func TestOutboxClosed(t *testing.T) {
	st, _, _ := queuedStream(t)
	require.NoError(t, st.deliver(&transport.Request{Method: "m"}))
	st.out.close()
	require.ErrorIs(t, st.deliver(&transport.Request{Method: "m"}), transport.ErrStreamGone)
	assert.Nil(t, st.out.queue)
}
