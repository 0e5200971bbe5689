package middleware

import (
	"encoding/json"
	"strconv"
	"strings"
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
	assert.Equal(t, maxSpanStarts, c.size())

	first := c.get(&server.Request{Method: "tools/call", Name: "tool-0"})
	assert.Same(t, first, c.get(&server.Request{Method: "tools/call", Name: "tool-0"}), "a cached start is shared")

	ping := c.get(&server.Request{Method: "ping", Name: "ignored"})
	assert.Equal(t, "ping", ping.name, "only tools/call and prompts/get have a target")
	prompt := c.get(&server.Request{Method: "prompts/get", Name: "greet"})
	assert.Equal(t, "prompts/get greet", prompt.name)
	assert.Equal(t, "gen_ai.prompt.name", string(prompt.attrs[1].Key))
}

// TestSpanStartsByMethodAndTarget checks that the cache tells apart a
// method with a target from a method whose name holds the same words (a
// span name alone would not), and a method without a target from the same
// method with one.
func TestSpanStartsByMethodAndTarget(t *testing.T) {
	t.Parallel()
	var c spanStarts
	call := c.get(&server.Request{Method: "tools/call", Name: "x"})
	odd := c.get(&server.Request{Method: "tools/call x"})
	require.NotSame(t, call, odd)
	assert.Len(t, call.attrs, 3, "tools/call of x: method, tool name, operation name")
	assert.Len(t, odd.attrs, 1, "method tools/call x: the method only")
	bare := c.get(&server.Request{Method: "tools/call"})
	assert.Len(t, bare.attrs, 1, "tools/call without a name has no target")
	assert.Same(t, call, c.get(&server.Request{Method: "tools/call", Name: "x"}), "cached")
	assert.Same(t, bare, c.get(&server.Request{Method: "tools/call"}), "cached")
	assert.Same(t, odd, c.get(&server.Request{Method: "tools/call x"}), "cached")
	assert.Equal(t, 3, c.size())
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
		members := make([]string, len(tt.meta))
		for i, k := range tt.meta {
			members[i] = strconv.Quote(k) + `:"x"`
		}
		meta, ok := server.ParseRequestMeta(json.RawMessage(`{` + strings.Join(members, ",") + `}`))
		assert.True(t, ok)
		assert.Equal(t, tt.want, protocolMetaOnly(&meta), "%v", tt.meta)
	}
}

// size returns the number of starts cached.
func (c *spanStarts) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
