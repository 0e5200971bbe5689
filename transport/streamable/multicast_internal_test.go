package streamable

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// castNotification returns a frozen notification numbered i.
func castNotification(t *testing.T, i int) *transport.Request {
	t.Helper()
	n := &transport.Request{Method: "notifications/message", Params: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	require.NoError(t, n.Freeze())
	return n
}

// TestMulticastWritesJoinedStreams: what Send logs is written, in order and
// once, by every stream whose session joined, and skipped by the others;
// Send counts the sessions that joined.
func TestMulticastWritesJoinedStreams(t *testing.T) {
	c := newMulticast()
	streams := fakeStreams(t, 2)
	joined, other := streams[0], streams[1]
	_, seen := c.listen()
	c.joined.Store(1)
	for i := range 3 {
		assert.Equal(t, 1, c.Send(t.Context(), castNotification(t, i)))
	}
	bell, last, err := joined.st.writeCast(c, seen, true)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), last)
	assert.Equal(t, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":0}}\n\n"+
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":1}}\n\n"+
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":2}}\n\n", joined.w.Body.String())
	select {
	case <-bell:
		t.Fatal("the bell of the next send rang")
	default:
	}
	_, again, err := joined.st.writeCast(c, last, true)
	require.NoError(t, err)
	assert.Equal(t, last, again)
	assert.Equal(t, 3, strings.Count(joined.w.Body.String(), "event:"), "nothing written twice")

	_, otherLast, err := other.st.writeCast(c, seen, false)
	require.NoError(t, err)
	assert.Equal(t, last, otherLast, "a stream whose session did not join moves past the events")
	assert.Empty(t, other.w.Body.String())
	assert.Empty(t, *joined.cuts)
}

// TestMulticastBacklogCutsTheStream: a stream that fell more than
// multicastBacklog events behind is cut, counted once as CutBacklog; one
// just within it writes them all.
func TestMulticastBacklogCutsTheStream(t *testing.T) {
	c := newMulticast()
	streams := fakeStreams(t, 2)
	behind, within := streams[0], streams[1]
	for i := range multicastBacklog + 1 {
		c.Send(t.Context(), castNotification(t, i))
	}
	_, _, err := behind.st.writeCast(c, 0, true)
	require.ErrorIs(t, err, transport.ErrStreamGone)
	assert.Equal(t, []StreamCut{CutBacklog}, *behind.cuts)
	assert.Empty(t, behind.w.Body.String(), "nothing written once the first event is gone")

	_, _, err = within.st.writeCast(c, 1, true)
	require.NoError(t, err)
	assert.Equal(t, multicastBacklog, strings.Count(within.w.Body.String(), "event:"))
	assert.Empty(t, *within.cuts)
}

// TestMulticastBellMissesNothing: a stream that waits on the bell listen
// (or writeCast) gave it, while sends go on concurrently, writes every
// event exactly once, in order.
func TestMulticastBellMissesNothing(t *testing.T) {
	const sends = 200
	c := newMulticast()
	streams := fakeStreams(t, 1)
	bell, seen := c.listen()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range sends {
			c.Send(t.Context(), castNotification(t, i))
		}
	})
	for seen < sends {
		<-bell
		var err error
		bell, seen, err = streams[0].st.writeCast(c, seen, true)
		require.NoError(t, err)
	}
	wg.Wait()
	body := streams[0].w.Body.String()
	require.Equal(t, sends, strings.Count(body, "event:"))
	for i := range sends {
		at := strings.Index(body, fmt.Sprintf(`{"n":%d}`, i))
		require.GreaterOrEqual(t, at, 0, "event %d", i)
		body = body[at:]
	}
}

// fakeStream is a started standalone GET stream writing to a recorder.
type fakeStream struct {
	st   *stream
	w    *httptest.ResponseRecorder
	cuts *[]StreamCut
}

func fakeStreams(t *testing.T, n int) []fakeStream {
	out := make([]fakeStream, n)
	for i := range out {
		st, w, cuts := queuedStream(t)
		out[i] = fakeStream{st: st, w: w, cuts: cuts}
	}
	return out
}
