package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// TestAccountingLaw proves the law the metrics keep: every request that
// starts ends in exactly one outcome. Sessions send a seeded random mix of
// requests (answered, failed, tool errors, panics, unknown tools and methods,
// handlers that wait) on real goroutines, cancel some, and either disconnect
// with work in flight or stop after the last answer. Once every Serve has
// returned, in-flight is zero and, per method, started equals the sum of the
// outcome counters; the answered outcomes equal the responses the clients
// read; the duration histogram counted every request once; and every
// cancelled request was also counted as a cancellation and a drop.
func TestAccountingLaw(t *testing.T) {
	testkit.Watchdog(t)
	const sessions, perSession = 8, 60
	seed := uint64(20260728)
	t.Logf("seed %d", seed)

	m := metrics.New(middleware.MetricsVocabulary())
	srv := server.New(
		server.WithMiddleware(middleware.RecordMetrics(m)),
		server.WithObserver(middleware.MetricsObserver(m)),
	)
	addTools(t, srv)
	release := make(chan struct{}) // "wait" handlers return when it closes or their context ends
	require.NoError(t, srv.AddTool(server.Tool{Name: "wait", Description: "wait"},
		func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-release:
				return &server.CallToolResult{}, nil
			}
		}))

	var answered, ended atomic.Int64
	var releaseOnce sync.Once
	var wg sync.WaitGroup
	for i := range sessions {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() {
			runLawSession(t, srv, m, rng, perSession, &answered)
			if ended.Add(1) == sessions/2 { // the later sessions see their waits answered
				releaseOnce.Do(func() { close(release) })
			}
		})
	}
	wg.Wait()

	got := series(t, m)
	started, finished, inFlight, durations := map[string]float64{}, map[string]float64{}, 0.0, 0.0
	byOutcome := map[string]float64{}
	events := map[string]float64{}
	for k, v := range got {
		switch {
		case strings.HasPrefix(k, mcpconv.MetricRequestsStarted):
			started[method(k)] += v
		case strings.HasPrefix(k, mcpconv.MetricRequestsFinished):
			finished[method(k)] += v
			byOutcome[label(k, "outcome")] += v
		case strings.HasPrefix(k, mcpconv.MetricRequestsInFlight):
			inFlight += v
		case strings.HasPrefix(k, mcpconv.MetricOperationDuration+"_count"):
			durations += v
		case strings.HasPrefix(k, mcpconv.MetricCancellations), strings.HasPrefix(k, mcpconv.MetricLateResponsesDropped):
			events[k[:strings.IndexByte(k, '{')]] += v
		}
	}
	total := 0.0
	for _, v := range started {
		total += v
	}
	t.Logf("started %v; outcomes %v; events %v", total, byOutcome, events)
	require.Positive(t, total)
	assert.Zero(t, inFlight, "requests in flight after every session ended")
	assert.Equal(t, started, finished, "per method, started = sum of outcomes")
	assert.InDelta(t, total, durations, 0, "one duration observation per request")
	assert.InDelta(t, float64(answered.Load()), byOutcome[mcpconv.OutcomeOK]+byOutcome[mcpconv.OutcomeError], 0,
		"answered outcomes = responses the clients read")
	assert.GreaterOrEqual(t, events[mcpconv.MetricCancellations], byOutcome[mcpconv.OutcomeCancelled])
	assert.GreaterOrEqual(t, events[mcpconv.MetricLateResponsesDropped],
		byOutcome[mcpconv.OutcomeCancelled]+byOutcome[mcpconv.OutcomeDropped])
	assert.Zero(t, got[`mcp_server_sessions_active{transport="memory"}`])
	assert.InDelta(t, sessions, got[`mcp_server_session_duration_seconds_count{cause="transport_close",transport="memory"}`], 0)
}

// runLawSession runs one client: initialize, n random requests, then a
// disconnect, either at once (work in flight) or after a final ping.
func runLawSession(t *testing.T, srv *server.Server, m *metrics.Metrics, rng *rand.Rand, n int, answered *atomic.Int64) {
	client, end := memory.NewPair()
	served := make(chan error, 1)
	go func() {
		served <- middleware.CountConns(srv, m, telemetry.TransportMemory).Serve(context.Background(), end)
	}()

	const lastID = 1 << 20
	var readerWG sync.WaitGroup
	initialized := make(chan struct{})
	readerWG.Go(func() { // reads until the connection ends; closes it on the last ping's answer
		for {
			msg, err := client.Read(context.Background())
			if err != nil {
				return
			}
			resp, ok := msg.(*transport.Response)
			if !ok {
				continue
			}
			answered.Add(1)
			switch resp.ID {
			case transport.Int64ID(1):
				close(initialized)
			case transport.Int64ID(lastID):
				_ = client.Close()
			}
		}
	})
	write := func(msg transport.Message) bool {
		return client.Write(context.Background(), msg) == nil
	}
	params := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return b
	}
	write(&transport.Request{ID: transport.Int64ID(1), Method: "initialize", Params: params(map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "law", "version": "1"},
	})})
	<-initialized
	write(&transport.Request{Method: "notifications/initialized"})

	tools := []string{"echo", "fail", "panic", "wait", "wait", "wait", "no-such-tool"}
	for i := range n {
		id := int64(i + 2)
		var req *transport.Request
		switch rng.IntN(10) {
		case 0:
			req = &transport.Request{ID: transport.Int64ID(id), Method: "ping"}
		case 1:
			req = &transport.Request{ID: transport.Int64ID(id), Method: fmt.Sprintf("made/up-%d", rng.IntN(3))}
		default:
			req = &transport.Request{
				ID: transport.Int64ID(id), Method: "tools/call",
				Params: params(map[string]any{"name": tools[rng.IntN(len(tools))], "arguments": map[string]any{}}),
			}
		}
		if !write(req) {
			break
		}
		if rng.IntN(4) == 0 { // cancel a random earlier request, maybe finished already
			target := int64(rng.IntN(i+1) + 2)
			write(&transport.Request{Method: "notifications/cancelled", Params: params(map[string]any{"requestId": target})})
		}
	}
	if rng.IntN(2) == 0 {
		_ = client.Close() // disconnect with work in flight
	} else {
		write(&transport.Request{ID: transport.Int64ID(lastID), Method: "ping"})
	}
	err := <-served
	if err != nil && !errors.Is(err, transport.ErrPeerGone) {
		t.Errorf("Serve: %v", err)
	}
	_ = client.Close()
	readerWG.Wait()
}

// method returns the mcp_method_name label of a series key.
func method(key string) string { return label(key, mcpconv.LabelMethod) }

// label returns the value of the named label of a series key.
func label(key, name string) string {
	i := strings.Index(key, name+`="`)
	if i < 0 {
		return ""
	}
	rest := key[i+len(name)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}
