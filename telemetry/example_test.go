package telemetry_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/telemetry"
)

// ExampleNewStreamsCut counts the streams a Streamable HTTP endpoint cut
// off by itself (its hook, streamable.WithStreamCutHook, calls Cut with
// the cut's name), by reason; a reason it does not know counts as other.
func ExampleNewStreamsCut() {
	cuts := telemetry.NewStreamsCut()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cuts)
	cuts.Cut("write_timeout")
	cuts.Cut("made-up")

	families, _ := reg.Gather()
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v > 0 {
				fmt.Println(mf.GetName(), m.GetLabel()[0].GetValue(), v)
			}
		}
	}
	// Output:
	// mcp_server_streams_cut_total other 1
	// mcp_server_streams_cut_total write_timeout 1
}
