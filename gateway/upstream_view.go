package gateway

import (
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
)

// hopOutcomes are the outcomes of a call forwarded upstream, as
// mcp_gateway_upstream_calls_total counts them, in the order of
// callTally's counts.
var hopOutcomes = [...]string{mcpconv.OutcomeOK, metrics.ToolError, mcpconv.OutcomeError, mcpconv.OutcomeCancelled, metrics.UpstreamClosed, metrics.NotReady}

// callTally is what one upstream's calls did, for its status
// (UpstreamStatus): how many ended in each outcome, and the summed
// duration of those sent.
type callTally struct {
	counts [len(hopOutcomes)]atomic.Int64
	sent   atomic.Int64 // calls sent (not not_ready)
	nanos  atomic.Int64 // their summed duration
}

// add counts a call that ended in outcome after d.
func (t *callTally) add(outcome string, d time.Duration) {
	for i, o := range hopOutcomes {
		if o == outcome {
			t.counts[i].Add(1)
			break
		}
	}
	if outcome != metrics.NotReady {
		t.sent.Add(1)
		t.nanos.Add(int64(d))
	}
}

// fill sets st's counts, by outcome (the outcomes never seen left out),
// and mean latency.
func (t *callTally) fill(st *UpstreamStatus) {
	for i, o := range hopOutcomes {
		if n := t.counts[i].Load(); n > 0 {
			if st.Calls == nil {
				st.Calls = make(map[string]int64, len(hopOutcomes))
			}
			st.Calls[o] = n
		}
	}
	if n := t.sent.Load(); n > 0 {
		st.MeanLatency = time.Duration(t.nanos.Load() / n)
	}
}
