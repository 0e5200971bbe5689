package streamable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// TestEventMessageOnOneLine: an SSE event's data never holds CR or LF
// (jsonscan.OneLine compacts it; its own test covers the cases): a result
// relayed with CR and LF as white space is written compacted.
func TestEventMessageOnOneLine(t *testing.T) {
	b, err := appendEventMessage(appendEventHead(nil, "7"), &transport.Response{ID: transport.Int64ID(1), Result: []byte("{\"k\":\r\n1}")})
	require.NoError(t, err)
	assert.Equal(t, "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"k\":1}}", string(b))
}
