package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport"
)

// A listen stream the client has cancelled gets no notification, even in
// the window before its handler has left the registry; a live stream on
// the same session still gets it, queued for its handler to write, in
// the form the wire carries.
func TestNotifyListenersSkipsCancelled(t *testing.T) {
	srv := New()
	listen := func(id int64) (*listener, context.CancelFunc) {
		ctx, cancel := context.WithCancel(t.Context())
		live, stop := context.WithCancelCause(ctx)
		l := &listener{
			live: live, stop: stop, events: make(chan listenEvent, listenBacklog),
			filter: subscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///a"}},
			meta:   map[string]any{vocab.MetaSubscriptionID: transport.Int64ID(id)},
		}
		srv.listeners.add(l)
		return l, cancel
	}
	gone, cancelGone := listen(1)
	live, cancelLive := listen(2)
	defer cancelLive()
	cancelGone() // cancelled; its handler has not removed it yet

	srv.notifyListeners("notifications/tools/list_changed", "", 0)
	srv.notifyListeners("notifications/resources/updated", "file:///a", 0)
	srv.notifyListeners("notifications/resources/updated", "file:///b", 0)
	assert.Empty(t, gone.events, "a cancelled stream gets nothing")
	require.Len(t, live.events, 2)
	assert.Equal(t, listenEvent{"notifications/tools/list_changed", ""}, <-live.events)
	assert.Equal(t, listenEvent{"notifications/resources/updated", "file:///a"}, <-live.events)
	raw, err := json.Marshal(listenParams{Meta: live.meta, URI: "file:///a"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"uri":"file:///a"}`, string(raw))
}

// A listen stream whose handler does not get its notifications written as
// fast as they come (its client does not read) ends once listenBacklog are
// waiting, with errListenBacklog as the cause; the others are untouched.
func TestNotifyListenersBacklogEndsTheStream(t *testing.T) {
	srv := New()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	live, stop := context.WithCancelCause(ctx)
	l := &listener{
		live: live, stop: stop, events: make(chan listenEvent, listenBacklog),
		filter: subscriptionFilter{ToolsListChanged: true},
	}
	srv.listeners.add(l)
	for range listenBacklog {
		srv.notifyListeners("notifications/tools/list_changed", "", 0)
	}
	require.NoError(t, live.Err(), "a full queue is not yet over")
	srv.notifyListeners("notifications/tools/list_changed", "", 0)
	require.Error(t, live.Err())
	require.ErrorIs(t, context.Cause(live), errListenBacklog)
	assert.NoError(t, ctx.Err(), "the request itself is not cancelled: its handler answers")
}
