package metrics

import (
	"context"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// endpointKey is the context key of the catalog endpoint a request came
// through.
type endpointKey struct{}

// ContextWithEndpoint returns ctx naming name, the gateway's catalog
// endpoint (/mcp/NAME) a request came through, for [EndpointOf].
func ContextWithEndpoint(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, endpointKey{}, name)
}

// EndpointOf returns the catalog endpoint ctx names ([ContextWithEndpoint]),
// "" for none: the default endpoint.
func EndpointOf(ctx context.Context) string {
	name, _ := ctx.Value(endpointKey{}).(string)
	return name
}

// endpointLabel returns the value of the request duration's endpoint
// label of endpoint, not "": the name itself while fewer than
// MaxEndpointLabels names are, else other.
func (m *Metrics) endpointLabel(endpoint string) string {
	if !validLabelValue(endpoint) || endpoint == mcpconv.LabelOther {
		return mcpconv.LabelOther
	}
	if _, ok := m.endpoints.Load(endpoint); ok {
		return endpoint
	}
	m.endpointsMu.Lock()
	defer m.endpointsMu.Unlock()
	if _, ok := m.endpoints.Load(endpoint); ok {
		return endpoint
	}
	if m.endpointsN >= MaxEndpointLabels {
		return mcpconv.LabelOther
	}
	m.endpointsN++
	m.endpoints.Store(endpoint, struct{}{})
	return endpoint
}
