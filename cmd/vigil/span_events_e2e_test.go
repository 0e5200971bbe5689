package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// spanEventRequests is the mixed load of TestE2ESpanEventsInsideTheirSpans.
const spanEventRequests = 200

// traceSink is an OTLP/HTTP traces receiver: it keeps every span exported,
// and every export as protojson text (names, attributes, events, statuses).
type traceSink struct {
	url   string
	mu    sync.Mutex
	spans []spanTimes
	text  strings.Builder
}

// spanTimes is what the check needs of a span: its name, start, end and
// the times of its events, in Unix nanoseconds.
type spanTimes struct {
	name       string
	start, end uint64
	events     []uint64
}

func newTraceSink(t *testing.T) *traceSink {
	t.Helper()
	s := &traceSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		req := &coltracepb.ExportTraceServiceRequest{}
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "not an OTLP traces export", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.text.WriteString(protojson.Format(req))
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					st := spanTimes{name: sp.GetName(), start: sp.GetStartTimeUnixNano(), end: sp.GetEndTimeUnixNano()}
					for _, e := range sp.GetEvents() {
						st.events = append(st.events, e.GetTimeUnixNano())
					}
					s.spans = append(s.spans, st)
				}
			}
		}
		s.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// exported returns every export received, as protojson text.
func (s *traceSink) exported() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

func (s *traceSink) received() []spanTimes {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]spanTimes(nil), s.spans...)
}

// spanEventLoad runs spanEventRequests requests of every kind on a 2025
// session of url (results, tool errors, invalid arguments, -32602, -32601,
// notifications/cancelled, stream closes), and ends with a DELETE during a
// call; it returns how many requests it made.
func spanEventLoad(ctx context.Context, t *testing.T, url string, hc *http.Client) int {
	t.Helper()
	c := newE2EClient(url, hc)
	require.NoError(t, c.initialize(ctx))
	n := 1
	for i := range spanEventRequests {
		n++
		switch i % 8 {
		case 0, 1, 2:
			m, err := c.callTool(ctx, "echo", map[string]any{"text": fmt.Sprint(i)}, "")
			require.NoError(t, err)
			require.Nil(t, m.Error)
		case 3: // invalid arguments: a tool error
			_, err := c.callTool(ctx, "echo", map[string]any{}, "")
			require.NoError(t, err)
		case 4: // an unknown tool: -32602
			m, err := c.callTool(ctx, "nope", nil, "")
			require.NoError(t, err)
			require.NotNil(t, m.Error)
		case 5: // an unknown method: -32601
			_, msg := c.request("nope/nothing", nil)
			resp, err := c.post(ctx, msg)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		case 6: // cancelled with notifications/cancelled: cancelled, response_dropped
			p := c.startCall(ctx, "sleep", map[string]any{"ms": 60000}, "")
			waitInFlightCall(ctx, t, c, 1)
			end, err := c.cancel(ctx, p)
			require.NoError(t, err)
			require.NoError(t, end.err)
			waitInFlightCall(ctx, t, c, 0)
		case 7: // the POST closed: stream_close
			p := c.startCall(ctx, "sleep", map[string]any{"ms": 60000}, "")
			waitInFlightCall(ctx, t, c, 1)
			p.abort()
			<-p.done
			waitInFlightCall(ctx, t, c, 0) // its cause settled (StreamCloseGrace)
		}
	}
	p := c.startCall(ctx, "sleep", map[string]any{"ms": 60000}, "")
	waitInFlightCall(ctx, t, c, 1)
	require.NoError(t, c.deleteSession(ctx))
	end := <-p.done
	require.NoError(t, end.err)
	require.NotNil(t, end.msg, "the call cut short by the DELETE is answered")
	require.NotNil(t, end.msg.Error)
	assert.Equal(t, int64(-32000), end.msg.Error.Code, "session terminated")
	return n + 1
}

// waitInFlightCall waits until the tools/call in flight on url's server
// are want (a call reached its handler, or every call was sealed).
func waitInFlightCall(ctx context.Context, t *testing.T, c *e2eClient, want int) {
	t.Helper()
	require.NoError(t, waitInFlight(ctx, c.hc, strings.TrimSuffix(c.url, "/mcp")+"/metrics", want))
}

// late counts the events of spans stamped outside their span.
func late(spans []spanTimes) (events, outside int) {
	for _, s := range spans {
		for _, e := range s.events {
			events++
			if e < s.start || e > s.end {
				outside++
			}
		}
	}
	return events, outside
}

// TestE2ESpanEventsInsideTheirSpans: after 200 mixed requests (results,
// tool errors, -32602, -32601, cancels, stream closes, a DELETE during a
// call), no span event exported over OTLP, nor kept on the trace page, is
// stamped after its span's end (or before its start).
func TestE2ESpanEventsInsideTheirSpans(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()

	sink := newTraceSink(t)
	vigil, mcpURL := startVigilE2EEnv(ctx, t, sink.url, []string{"OTEL_METRICS_EXPORTER=none"})
	requests := spanEventLoad(ctx, t, mcpURL, hc)
	require.NoError(t, vigil.stop(10*time.Second), "vigil flushes its spans as it stops")
	spans := sink.received()
	require.GreaterOrEqual(t, len(spans), requests, "a span per request at least")
	events, outside := late(spans)
	t.Logf("OTLP: %d spans of %d requests, %d events, %d outside their span", len(spans), requests, events, outside)
	assert.Positive(t, events)
	assert.Zero(t, outside, "events after their span's end, over OTLP")

	// The trace page (no exporter: the in-memory ring keeps the traces).
	page := startService(t, "-http", "127.0.0.1:0")
	requests = spanEventLoad(ctx, t, page.base+"/mcp", hc)
	raw, err := debugGet(hc, page.base+"/debug/vigil?format=json")
	require.NoError(t, err)
	var snap struct {
		Traces []struct {
			Spans []struct {
				Name   string    `json:"name"`
				Start  time.Time `json:"start"`
				End    time.Time `json:"end"`
				Events []struct {
					Time time.Time `json:"time"`
				} `json:"events"`
			} `json:"spans"`
		} `json:"traces"`
	}
	require.NoError(t, json.Unmarshal(raw, &snap))
	var kept []spanTimes
	for _, tr := range snap.Traces {
		for _, s := range tr.Spans {
			st := spanTimes{name: s.Name, start: uint64(s.Start.UnixNano()), end: uint64(s.End.UnixNano())}
			for _, e := range s.Events {
				st.events = append(st.events, uint64(e.Time.UnixNano()))
			}
			kept = append(kept, st)
		}
	}
	events, outside = late(kept)
	t.Logf("trace page: %d traces kept of %d requests, %d spans, %d events, %d outside their span", len(snap.Traces), requests, len(kept), events, outside)
	assert.Positive(t, events)
	assert.Zero(t, outside, "events after their span's end, on the trace page")
}
