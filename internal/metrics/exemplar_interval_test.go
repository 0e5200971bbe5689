package metrics_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
)

// Trace ids of the exemplar tests, and the finished count's exemplar
// prefix (the id and value follow).
const (
	traceA = "0af7651916cd43dd8448eb211c80319c"
	traceB = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceC = "5cc3a1b2c3d4e5f60718293a4b5c6d7e"

	pingCounter = `mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="",mcp_method_name="ping",outcome="ok",rpc_response_status_code=""} trace_id=`
)

// TestExemplarInterval checks, in fake time, that a series' finished count
// and each of its duration buckets take a new exemplar at most once per
// interval, each bucket on its own, and that a zero interval takes every
// one.
func TestExemplarInterval(t *testing.T) {
	t.Parallel()
	bucket := func(le string) string {
		return `mcp_server_operation_duration_seconds{error_type="",gen_ai_tool_name="",mcp_method_name="ping",mcp_protocol_version="",network_protocol_name="",network_transport="",rpc_response_status_code=""} le=` + le + ` trace_id=`
	}
	tests := []struct {
		name string
		opts []metrics.Option
		want []string
	}{
		{
			name: "default: one a second per series and bucket",
			want: []string{
				bucket("0.01") + traceC + " 0.005", // a second later: replaced
				bucket("0.5") + traceB + " 0.3",    // another bucket: its own exemplar
				pingCounter + traceC + " 1",
			},
		},
		{
			name: "every observation",
			opts: []metrics.Option{metrics.WithExemplarInterval(0)},
			want: []string{
				bucket("0.01") + traceC + " 0.005",
				bucket("0.5") + traceB + " 0.3",
				pingCounter + traceC + " 1",
			},
		},
		{
			name: "a longer interval keeps the first",
			opts: []metrics.Option{metrics.WithExemplarInterval(time.Minute)},
			want: []string{
				bucket("0.01") + traceA + " 0.001",
				bucket("0.5") + traceB + " 0.3",
				pingCounter + traceA + " 1",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				m := metrics.New(vocabulary(), tt.opts...)
				finish := func(traceID string, d time.Duration) {
					m.RequestStarted("ping")
					m.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeOK, Duration: d, TraceID: hexTrace(traceID)})
				}
				finish(traceA, time.Millisecond)
				finish(traceB, 300*time.Millisecond) // within the second, another bucket
				time.Sleep(time.Second)
				finish(traceC, 5*time.Millisecond)
				assert.Equal(t, tt.want, exemplars(t, m))
			})
		})
	}
}

// TestExemplarIntervalFollowsEnded checks that a request's end, when
// given, paces the exemplars instead of the clock: with the clock standing
// still, an end a second after the first exemplar's takes a new one, and
// an end within the second does not.
func TestExemplarIntervalFollowsEnded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := metrics.New(vocabulary())
		t0 := time.Now()
		finish := func(traceID string, ended time.Time) {
			m.RequestStarted("ping")
			m.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeOK, Duration: time.Millisecond, Ended: ended, TraceID: hexTrace(traceID)})
		}
		finish(traceA, t0)
		finish(traceB, t0.Add(999*time.Millisecond)) // within the second: traceA kept
		assert.Contains(t, exemplars(t, m), pingCounter+traceA+" 1")
		finish(traceC, t0.Add(time.Second)) // the clock has not moved; the end has
		assert.Contains(t, exemplars(t, m), pingCounter+traceC+" 1")
	})
}
