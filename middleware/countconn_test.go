package middleware_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

func encodedLen(t *testing.T, m transport.Message) float64 {
	b, err := transport.AppendMessage(nil, m)
	require.NoError(t, err)
	return float64(len(b))
}

// TestTrafficCounters checks the message and byte counters of a session
// served through CountConns: what the client wrote is what was received,
// what it read is what was sent, byte for byte.
func TestTrafficCounters(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil).start(nil)
		var in, out float64
		sendCounted := func(m transport.Message) {
			in += encodedLen(t, m)
			r.Send(m)
		}
		recvCounted := func() *transport.Response {
			resp, ok := r.Recv().(*transport.Response)
			require.True(t, ok)
			out += encodedLen(t, resp)
			return resp
		}
		sendCounted(&transport.Request{ID: transport.Int64ID(1), Method: "initialize", Params: json.RawMessage(
			`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)})
		require.Nil(t, recvCounted().Error)
		sendCounted(&transport.Request{Method: "notifications/initialized"})
		sendCounted(&transport.Request{ID: transport.Int64ID(2), Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)})
		require.Nil(t, recvCounted().Error)
		r.SendFrame([]byte(`{oops`))
		require.NotNil(t, recvCounted().Error)
		r.close()

		got := series(t, r.m)
		want := map[string]float64{
			`mcp_server_received_messages_total{kind="request",transport="memory"}`:      2,
			`mcp_server_received_messages_total{kind="notification",transport="memory"}`: 1,
			`mcp_server_received_messages_total{kind="invalid",transport="memory"}`:      1,
			`mcp_server_sent_messages_total{kind="response",transport="memory"}`:         3,
			`mcp_server_received_bytes_total{transport="memory"}`:                        in,
			`mcp_server_sent_bytes_total{transport="memory"}`:                            out,
		}
		for k := range got {
			if !strings.Contains(k, "_messages_total") && !strings.Contains(k, "_bytes_total") {
				delete(got, k)
			}
		}
		assert.Equal(t, want, got)
	})
}

// TestCountConnBatches checks batch sizes in both directions and that an
// unlabeled transport counts as other.
func TestCountConnBatches(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := metrics.New(middleware.MetricsVocabulary())
		peer, end := memory.NewPair()
		c := middleware.CountConn(end, m, "carrier-pigeon")
		defer func() { _ = c.Close() }()

		frame := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`
		go func() { _ = peer.WriteFrame(context.Background(), []byte(frame)) }()
		msg, err := c.Read(context.Background())
		require.NoError(t, err)
		require.IsType(t, transport.Batch{}, msg)

		batch := transport.ResponseBatch{
			{ID: transport.Int64ID(1), Result: json.RawMessage(`{}`)},
			{ID: transport.Int64ID(2), Error: &transport.Error{Code: -32601, Message: "no"}},
		}
		go func() { _, _ = peer.Read(context.Background()) }()
		require.NoError(t, c.Write(context.Background(), batch))
		synctest.Wait()

		got := series(t, m)
		assert.Equal(t, map[string]float64{
			`mcp_server_received_messages_total{kind="batch",transport="other"}`: 1,
			`mcp_server_sent_messages_total{kind="batch",transport="other"}`:     1,
			`mcp_server_received_bytes_total{transport="other"}`:                 float64(len(frame)),
			`mcp_server_sent_bytes_total{transport="other"}`:                     encodedLen(t, batch),
		}, got)
	})
}

// TestNilMetricsPassThrough checks that a nil *Metrics leaves everything
// unwrapped and recording nothing.
func TestNilMetricsPassThrough(t *testing.T) {
	t.Parallel()
	_, end := memory.NewPair()
	defer func() { _ = end.Close() }()
	assert.Same(t, end, middleware.CountConn(end, nil, "stdio"))
	assert.NotNil(t, middleware.MetricsObserver(nil))
	called := false
	h := middleware.RecordMetrics(nil)(func(context.Context, *server.Request) (any, error) {
		called = true
		return nil, nil
	})
	_, err := h(context.Background(), &server.Request{ID: transport.Int64ID(1), Method: "ping"})
	require.NoError(t, err)
	assert.True(t, called)
}

// inlineConn is a transport.Inline Conn: it records the Dispatcher
// the session core hands it.
type inlineConn struct {
	transport.Conn
	dispatch transport.Dispatcher
}

func (c *inlineConn) SetDispatch(d transport.Dispatcher) { c.dispatch = d }

// TestCountConnKeepsInline checks that CountConn over a transport.Inline
// Conn is one too (hiding it would make the core read every message
// through Read), and counts what it dispatches as received.
func TestCountConnKeepsInline(t *testing.T) {
	t.Parallel()
	m := metrics.New(middleware.MetricsVocabulary())
	_, end := memory.NewPair()
	defer func() { _ = end.Close() }()
	under := &inlineConn{Conn: end}
	c := middleware.CountConn(under, m, telemetry.TransportStreamableHTTP)
	in, ok := c.(transport.Inline)
	require.True(t, ok, "CountConn hides transport.Inline")
	var got []transport.Message
	in.SetDispatch(dispatchFunc(func(_ context.Context, msg transport.Message) { got = append(got, msg) }))
	require.NotNil(t, under.dispatch)

	ping := &transport.Request{ID: transport.Int64ID(1), Method: "ping"}
	abandoned := &transport.Abandoned{ID: transport.Int64ID(1)}
	under.dispatch.Dispatch(context.Background(), ping)
	under.dispatch.Dispatch(context.Background(), abandoned) // an event, not a message: not counted
	assert.Equal(t, []transport.Message{ping, abandoned}, got)
	assert.Equal(t, map[string]float64{
		`mcp_server_received_messages_total{kind="request",transport="streamable_http"}`: 1,
		`mcp_server_received_bytes_total{transport="streamable_http"}`:                   encodedLen(t, ping),
	}, series(t, m))

	_, isInline := middleware.CountConn(end, m, "stdio").(transport.Inline)
	assert.False(t, isInline, "a Conn that is not Inline stays so")
}

// drivenConn is a transport.Driven Conn: it records the end function the
// session core hands it.
type drivenConn struct {
	inlineConn
	end func(error)
}

func (c *drivenConn) SetEnd(end func(error)) { c.end = end }

// TestCountConnsKeepsAttach checks that CountConns over a server that attaches
// (*server.Server) is one too, and that CountConn over a transport.Driven
// Conn is one too (hiding either would cost an idle Streamable HTTP session
// a goroutine), passing the end of the connection on.
func TestCountConnsKeepsAttach(t *testing.T) {
	t.Parallel()
	m := metrics.New(middleware.MetricsVocabulary())
	_, isAttacher := middleware.CountConns(server.New(), m, telemetry.TransportStreamableHTTP).(transport.Attacher)
	assert.True(t, isAttacher, "CountConns hides Attach")

	_, end := memory.NewPair()
	defer func() { _ = end.Close() }()
	under := &drivenConn{inlineConn: inlineConn{Conn: end}}
	d, ok := middleware.CountConn(under, m, telemetry.TransportStreamableHTTP).(transport.Driven)
	require.True(t, ok, "CountConn hides transport.Driven")
	var ended error
	d.SetEnd(func(err error) { ended = err })
	require.NotNil(t, under.end)
	under.end(transport.ErrPeerGone)
	assert.ErrorIs(t, ended, transport.ErrPeerGone)
}

// memberConn is a transport.MulticastMember Conn of group.
type memberConn struct {
	drivenConn
	group  transport.Multicast
	joined bool
}

func (c *memberConn) Multicast() transport.Multicast { return c.group }
func (c *memberConn) JoinMulticast()                 { c.joined = true }

// fakeGroup is a transport.Multicast of members sessions.
type fakeGroup struct {
	members int
	sent    []*transport.Request
}

func (g *fakeGroup) Send(_ context.Context, n *transport.Request) int {
	g.sent = append(g.sent, n)
	return g.members
}

// TestCountConnKeepsMulticast checks that CountConn over a
// transport.MulticastMember passes the group on (hiding it would cost a
// notification to every Streamable HTTP session a write per session), the
// same group for every Conn of it, counting each notification it sends
// once per session it goes to, and the join.
func TestCountConnKeepsMulticast(t *testing.T) {
	t.Parallel()
	m := metrics.New(middleware.MetricsVocabulary())
	group := &fakeGroup{members: 3}
	_, end := memory.NewPair()
	defer func() { _ = end.Close() }()
	one := &memberConn{drivenConn: drivenConn{inlineConn: inlineConn{Conn: end}}, group: group}
	two := &memberConn{drivenConn: drivenConn{inlineConn: inlineConn{Conn: end}}, group: group}
	a, ok := middleware.CountConn(one, m, telemetry.TransportStreamableHTTP).(transport.MulticastMember)
	require.True(t, ok, "CountConn hides transport.MulticastMember")
	b := middleware.CountConn(two, m, telemetry.TransportStreamableHTTP).(transport.MulticastMember)
	require.NotNil(t, a.Multicast())
	assert.Equal(t, a.Multicast(), b.Multicast(), "two Conns of one group give equal groups")

	a.JoinMulticast()
	assert.True(t, one.joined)
	n := &transport.Request{Method: "notifications/tools/list_changed"}
	require.NoError(t, n.Freeze())
	assert.Equal(t, 3, a.Multicast().Send(context.Background(), n))
	assert.Equal(t, []*transport.Request{n}, group.sent)
	assert.Equal(t, map[string]float64{
		`mcp_server_sent_messages_total{kind="notification",transport="streamable_http"}`: 3,
		`mcp_server_sent_bytes_total{transport="streamable_http"}`:                        3 * encodedLen(t, n),
	}, series(t, m))

	none := middleware.CountConn(&memberConn{drivenConn: drivenConn{inlineConn: inlineConn{Conn: end}}}, m, "stdio").(transport.MulticastMember)
	assert.Nil(t, none.Multicast(), "no group under it: none")
}

// dispatchFunc is a function that is a transport.Dispatcher.
type dispatchFunc func(ctx context.Context, m transport.Message)

func (f dispatchFunc) Dispatch(ctx context.Context, m transport.Message) { f(ctx, m) }
