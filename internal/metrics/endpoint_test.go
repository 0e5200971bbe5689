package metrics_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
)

// A gateway's request duration names the catalog endpoint a request came
// through ("" for the default one), a successful request's too; the first
// MaxEndpointLabels names label themselves, the rest and an invalid name
// are other. A server that is no gateway has no endpoint label.
func TestEndpointLabel(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary(), metrics.WithUpstreams("u"))
	call := func(endpoint string) {
		m.RequestStarted("tools/list")
		m.RequestFinished(metrics.RequestEnd{Method: "tools/list", Outcome: mcpconv.OutcomeOK, Endpoint: endpoint})
	}
	call("")
	for i := range metrics.MaxEndpointLabels + 3 {
		call(fmt.Sprintf("e%d", i))
	}
	call("e0")
	call("\xff")
	got := nonZero(t, m)
	key := func(endpoint string) string {
		return `mcp_server_operation_duration_seconds_count{endpoint="` + endpoint + `",error_type="",gen_ai_tool_name="",mcp_method_name="tools/list",` +
			`mcp_protocol_version="",network_protocol_name="",network_transport="",rpc_response_status_code="",upstream=""}`
	}
	assert.InDelta(t, 1, got[key("")], 0, "the default endpoint")
	assert.InDelta(t, 2, got[key("e0")], 0, "a name already labeled keeps its label")
	assert.InDelta(t, 1, got[key(fmt.Sprintf("e%d", metrics.MaxEndpointLabels-1))], 0, "the last name within the bound")
	assert.NotContains(t, got, key(fmt.Sprintf("e%d", metrics.MaxEndpointLabels)), "the first name past the bound")
	assert.InDelta(t, 4, got[key("other")], 0, "3 past the bound and one invalid name")

	plain := metrics.New(vocabulary())
	plain.RequestStarted("tools/list")
	plain.RequestFinished(metrics.RequestEnd{Method: "tools/list", Outcome: mcpconv.OutcomeOK, Endpoint: "e0"})
	for k := range nonZero(t, plain) {
		assert.NotContains(t, k, "endpoint=", "no gateway, no endpoint label")
	}
	assert.Equal(t, "red", metrics.EndpointOf(metrics.ContextWithEndpoint(context.Background(), "red")))
	assert.Empty(t, metrics.EndpointOf(context.Background()))
}
