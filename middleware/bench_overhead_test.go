package middleware_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil/internal/loadgen"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// BenchmarkHTTPEchoOverhead measures the instrumentation's cost as one
// ratio from one run, robust to a machine whose speed drifts: it serves the
// echo benchmark from two servers at once, one without middleware and one
// instrumented, and alternates rounds of benchOverheadRound requests
// between them (none, instrumented, instrumented, none, ...), so that both
// see the same moments of the machine. b.N requests go to each. The
// instrumented servers: the full chain sampling every request, cmd/vigil's
// default chain (see BenchmarkHTTPEchoShipped), the full chain with
// CountConns counting traffic, the full chain sampling 1% of traces,
// and the bare SDK span (see BenchmarkHTTPEchoSpanOnly). Reported:
// both throughputs, cost-% (the throughput lost, 100 × (1 − instrumented ÷
// none)) and cpu-cost-% (the CPU time per request added, in percent).
//
//	go test -run '^$' -bench HTTPEchoOverhead -benchtime=100000x ./middleware/
func BenchmarkHTTPEchoOverhead(b *testing.B) {
	b.Run("FullChain", func(b *testing.B) {
		benchOverhead(b, benchFullChain(b, nil), nil)
	})
	b.Run("Shipped", func(b *testing.B) {
		srv, wrap := benchShipped(b)
		benchOverhead(b, srv, wrap)
	})
	b.Run("FullChainTraffic", func(b *testing.B) {
		var m *metrics.Metrics
		srv := benchFullChain(b, &m)
		benchOverhead(b, srv, func(s streamable.Server) streamable.Server {
			return middleware.CountConns(s, m, telemetry.TransportStreamableHTTP)
		})
	})
	b.Run("FullChainSampled1pct", func(b *testing.B) {
		tp := benchTracerProviderSampling(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)))
		benchOverhead(b, benchFullChainWith(tp, nil), nil)
	})
	b.Run("SpanOnly", func(b *testing.B) {
		benchOverhead(b, benchSpanOnly(b), nil)
	})
}

// benchOverheadRound is the number of requests in one round: long enough
// for the CPU clock's 10 ms ticks, short enough to alternate often.
const benchOverheadRound = 2000

func benchOverhead(b *testing.B, instrumented *server.Server, wrap func(streamable.Server) streamable.Server) {
	targets := [2]benchTarget{newBenchTarget(b, server.New(), nil), newBenchTarget(b, instrumented, wrap)}
	var wall, cpu [2]time.Duration
	var done [2]int64
	var ids atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	for round := 0; done[0] < int64(b.N); round++ {
		n := min(benchOverheadRound, int64(b.N)-done[0])
		order := [2]int{0, 1}
		if round%2 == 1 {
			order = [2]int{1, 0}
		}
		for _, v := range order {
			t, base := targets[v], ids.Add(n)-n // ids unique across rounds and servers
			cpu0, _ := loadgen.ProcessCPU()
			start := time.Now()
			if _, err := loadgen.Run(t.client, benchWorkers, n, benchWant, func(w int, i int64) *http.Request {
				return t.request(w, base+i)
			}); err != nil {
				b.Fatal(err)
			}
			wall[v] += time.Since(start)
			cpu1, _ := loadgen.ProcessCPU()
			cpu[v] += cpu1 - cpu0
			done[v] += n
		}
	}
	b.StopTimer()
	none, inst := float64(done[0])/wall[0].Seconds(), float64(done[1])/wall[1].Seconds()
	b.ReportMetric(none, "none-req/s")
	b.ReportMetric(inst, "instrumented-req/s")
	b.ReportMetric(100*(1-inst/none), "cost-%")
	if cpu[0] > 0 {
		b.ReportMetric(100*(float64(cpu[1])/float64(cpu[0])-1), "cpu-cost-%")
	}
}
