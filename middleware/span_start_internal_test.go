package middleware

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestSpanStartsBounded checks that the span-start cache stops growing at
// maxSpanStarts, however many tool names clients send, and that starts
// past the bound, built for each request, are still right.
func TestSpanStartsBounded(t *testing.T) {
	t.Parallel()
	var c spanStarts
	for i := range 2 * maxSpanStarts {
		name := "tool-" + strconv.Itoa(i)
		st := c.get(&server.Request{Method: "tools/call", Name: name})
		require.Equal(t, "tools/call "+name, st.name)
		require.Len(t, st.attrs, 3) // method, tool name, operation name
	}
	assert.Len(t, *c.byKey.Load(), maxSpanStarts)

	first := c.get(&server.Request{Method: "tools/call", Name: "tool-0"})
	assert.Same(t, first, c.get(&server.Request{Method: "tools/call", Name: "tool-0"}), "a cached start is shared")

	ping := c.get(&server.Request{Method: "ping", Name: "ignored"})
	assert.Equal(t, "ping", ping.name, "only tools/call and prompts/get have a target")
	prompt := c.get(&server.Request{Method: "prompts/get", Name: "greet"})
	assert.Equal(t, "prompts/get greet", prompt.name)
	assert.Equal(t, "gen_ai.prompt.name", string(prompt.attrs[1].Key))
}

// TestProtocolMetaOnly checks which _meta the span starter extracts from:
// any that has a key MCP does not define.
func TestProtocolMetaOnly(t *testing.T) {
	tests := []struct {
		meta []string
		want bool
	}{
		{meta: nil, want: true},
		{meta: []string{"progressToken"}, want: true},
		{meta: []string{protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, protocol.MetaClientInfo}, want: true},
		{meta: []string{"traceparent"}, want: false},
		{meta: []string{protocol.MetaProtocolVersion, "baggage"}, want: false},
		{meta: []string{"progressToken", "uberctx-user"}, want: false}, // a custom propagator's key
		{meta: []string{"io.modelcontextprotocol"}, want: false},       // not under the prefix
	}
	for _, tt := range tests {
		meta := map[string]json.RawMessage{}
		for _, k := range tt.meta {
			meta[k] = json.RawMessage(`"x"`)
		}
		if tt.meta == nil {
			meta = nil
		}
		assert.Equal(t, tt.want, protocolMetaOnly(meta), "%v", tt.meta)
	}
}
