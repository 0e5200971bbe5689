package server

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A listen stream the client has cancelled gets no notification, even in
// the window before its handler has left the registry; a live stream on
// the same session still gets it.
func TestNotifyListenersSkipsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := New()
		client, conn := memory.NewPair()
		ss := newSession(t.Context(), srv, conn)
		t.Cleanup(func() { _ = client.Close(); _ = conn.Close() })

		listen := func(id int64) (*listener, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			live, stop := context.WithCancel(ctx)
			req := &Request{ID: transport.Int64ID(id), Method: "subscriptions/listen", Session: ss}
			l := &listener{
				ctx: ctx, live: live, req: req, stop: stop,
				filter: SubscriptionFilter{ToolsListChanged: true},
				meta:   map[string]any{protocol.MetaSubscriptionID: req.ID},
			}
			srv.listeners.add(l)
			return l, cancel
		}
		_, cancelGone := listen(1)
		_, cancelLive := listen(2)
		defer cancelLive()
		cancelGone() // cancelled; its handler has not removed it yet

		got := make(chan transport.Message, 4)
		readCtx, stopReading := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				m, err := client.Read(readCtx)
				if err != nil {
					return
				}
				got <- m
			}
		}()
		srv.notifyListeners("notifications/tools/list_changed", "", 0)
		srv.bg.Wait()
		synctest.Wait()
		stopReading()
		<-done
		close(got)

		var ids []string
		for m := range got {
			n, ok := m.(*transport.Request)
			require.True(t, ok)
			assert.Equal(t, "notifications/tools/list_changed", n.Method)
			ids = append(ids, string(n.Params))
		}
		assert.Equal(t, []string{`{"_meta":{"io.modelcontextprotocol/subscriptionId":2}}`}, ids,
			"only the live stream is notified")
	})
}
