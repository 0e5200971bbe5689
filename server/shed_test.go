package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/overload"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// onOffShedder sheds every request while on, and counts what it is asked.
type onOffShedder struct {
	on    atomic.Bool
	asked atomic.Int64
}

func (s *onOffShedder) Shed(context.Context) bool { s.asked.Add(1); return s.on.Load() }

// reasonCounter counts the rejections an Observer is told of, by reason.
type reasonCounter struct {
	mu sync.Mutex
	n  map[protocol.RejectReason]int
}

func (o *reasonCounter) MessageRejected(_ context.Context, _ *server.Session, _ protocol.Code, reason protocol.RejectReason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = make(map[protocol.RejectReason]int)
	}
	o.n[reason]++
}

func (o *reasonCounter) get(r protocol.RejectReason) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[r]
}

// stdioPeer is the client end of a server served over stdio pipes.
type stdioPeer struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Scanner
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(p.t, err)
}

type stdioMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func (p *stdioPeer) next() stdioMsg {
	p.t.Helper()
	require.True(p.t, p.out.Scan(), "the server's output ended")
	var m stdioMsg
	require.NoError(p.t, json.Unmarshal(p.out.Bytes(), &m), "%s", p.out.Bytes())
	return m
}

// Over stdio, a request the server's Shedder sheds is answered at once
// with the busy error and counted as overloaded, with no handler run;
// initialize, ping, notifications/cancelled and the answer to the
// server's elicitation are never shed.
func TestStdioShedRequestsGetTheBusyError(t *testing.T) {
	testkit.Watchdog(t)
	var shed onOffShedder
	obs := &reasonCounter{}
	srv := server.New(server.WithShedder(&shed), server.WithObserver(server.Observer{MessageRejected: obs.MessageRejected}))
	var calls atomic.Int64
	started, cause := make(chan struct{}, 1), make(chan error, 1)
	require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		calls.Add(1)
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "count"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		calls.Add(1)
		return server.Text("counted"), nil
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "ask"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		calls.Add(1)
		res, err := server.Elicit(ctx, &server.ElicitParams{
			Message:         "Who are you?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		})
		if err != nil {
			return nil, err
		}
		return server.Text(res.Action), nil
	}))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), stdio.New(inR, outW)) }()
	p := &stdioPeer{t: t, in: inW, out: bufio.NewScanner(outR)}

	shed.on.Store(true) // from the start: initialize is never shed
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	require.Nil(t, p.next().Error)
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	shed.on.Store(false)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	<-started
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	ask := p.next()
	require.Equal(t, "elicitation/create", ask.Method)
	require.Equal(t, int64(2), calls.Load())

	shed.on.Store(true)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"count","arguments":{}}}`)
	busy := p.next()
	assert.JSONEq(t, `3`, string(busy.ID))
	require.NotNil(t, busy.Error)
	assert.Equal(t, int64(protocol.CodeServerBusy), busy.Error.Code)
	assert.Equal(t, protocol.RejectOverloaded.Message(), busy.Error.Message)
	var wait struct {
		Seconds int `json:"retryAfterSeconds"`
	}
	require.NoError(t, json.Unmarshal(busy.Error.Data, &wait))
	assert.True(t, wait.Seconds >= 1 && wait.Seconds <= overload.MaxRetryAfter, "retry after %d s", wait.Seconds)
	assert.Equal(t, 1, obs.get(protocol.RejectOverloaded))
	assert.Equal(t, int64(2), calls.Load(), "a shed request reached a handler")
	asked := shed.asked.Load()

	p.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	pong := p.next()
	assert.JSONEq(t, `4`, string(pong.ID))
	assert.Nil(t, pong.Error)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	require.ErrorIs(t, <-cause, server.ErrClientCancel)
	p.send(`{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`)
	done := p.next()
	assert.JSONEq(t, `2`, string(done.ID))
	assert.JSONEq(t, `{"content":[{"type":"text","text":"accept"}]}`, string(done.Result))
	assert.Equal(t, asked, shed.asked.Load(), "the Shedder was asked about what is never shed")
	assert.Equal(t, 1, obs.get(protocol.RejectOverloaded))

	require.NoError(t, inW.Close())
	require.NoError(t, <-served, "the input ended: a clean end")
	_ = outR.Close()
	require.NoError(t, srv.Close())
}
