package server_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// subscriberLog is a server.ResourceSubscriber that records what it is
// told, and fails the subscriptions to refuse.
type subscriberLog struct {
	refuse string
	mu     sync.Mutex
	told   []string
}

func (l *subscriberLog) add(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.told = append(l.told, what)
}

func (l *subscriberLog) said() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.told...)
}

func (l *subscriberLog) Subscribe(ctx context.Context, uri string) error {
	if server.RequestFromContext(ctx) == nil {
		return errors.New("no request in the context")
	}
	if uri == l.refuse {
		return server.Errorf(protocol.CodeInternal, "refused upstream")
	}
	l.add("subscribe " + uri)
	return nil
}

func (l *subscriberLog) Unsubscribe(_ context.Context, uri string) error {
	l.add("unsubscribe " + uri)
	return nil
}

func (l *subscriberLog) Listen(_ context.Context, uris []string) {
	for _, uri := range uris {
		l.add("listen " + uri)
	}
}

// TestResourceSubscriber: resources/subscribe, resources/unsubscribe and
// a listen stream naming resources tell the ResourceSubscriber, the
// listen stream before it is acknowledged; a subscription it refuses is
// answered with its error and not held. NotifyListeners reaches listen
// streams, and no session.
func TestResourceSubscriber(t *testing.T) {
	srv := server.New()
	read := func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: req.URI, Text: "x"}}}, nil
	}
	require.NoError(t, srv.AddResource(server.Resource{URI: "file:///r", Name: "r"}, read))
	require.NoError(t, srv.AddResource(server.Resource{URI: "file:///no", Name: "no"}, read))
	log := &subscriberLog{refuse: "file:///no"}
	srv.SetResourceSubscriber(log)
	t.Cleanup(func() { _ = srv.Close() })

	c := mcptest.Connect(t, srv)
	_, rpcErr := c.Call("resources/subscribe", map[string]string{"uri": "file:///r"})
	require.Nil(t, rpcErr)
	_, rpcErr = c.Call("resources/subscribe", map[string]string{"uri": "file:///no"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, "refused upstream", rpcErr.Message)
	require.Len(t, srv.Sessions(), 1)
	ss := srv.Sessions()[0]
	assert.Equal(t, []string{"file:///r"}, ss.Subscriptions(), "the refused one is not held")
	assert.True(t, ss.Subscribed("file:///r"))
	assert.False(t, ss.Subscribed("file:///no"))

	l := mcptest.Pipe(t, srv)
	l.Request(1, "subscriptions/listen", map[string]any{"_meta": meta2026(nil), "notifications": map[string]any{"resourceSubscriptions": []string{"file:///r"}}})
	assert.Equal(t, "notifications/subscriptions/acknowledged", l.RecvRequest().Method)
	assert.Equal(t, []string{"subscribe file:///r", "listen file:///r"}, log.said(), "told before the ack")

	srv.NotifyListeners("notifications/resources/updated", "file:///r")
	n := l.RecvRequest()
	assert.Equal(t, "notifications/resources/updated", n.Method)
	assert.Contains(t, string(n.Params), "file:///r")
	c.Request(99, "ping", nil)
	assert.Equal(t, transport.Int64ID(99), c.RecvResponse().ID, "the session subscribed to file:///r was not told")

	_, rpcErr = c.Call("resources/unsubscribe", map[string]string{"uri": "file:///r"})
	require.Nil(t, rpcErr)
	assert.Equal(t, "unsubscribe file:///r", log.said()[2])
	assert.Empty(t, ss.Subscriptions())
	assert.False(t, ss.Subscribed("file:///r"))
}
