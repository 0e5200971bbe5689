package streamable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// Only a response or a notification travels as a RelayClient, on the way
// out (relayClient) and in (relay): never a request, nor a batch that may
// hold one.
func TestClientRelayable(t *testing.T) {
	for _, tt := range []struct {
		msg  string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":"a-1","result":{"action":"accept"}}`, true},
		{`{"jsonrpc":"2.0","id":"a-2","error":{"code":-1,"message":"no"}}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, false},
		{`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, false},
	} {
		m, err := transport.DecodeMessage([]byte(tt.msg))
		if err != nil {
			assert.False(t, tt.want, "%s: %v", tt.msg, err)
			continue
		}
		assert.Equal(t, tt.want, clientRelayable(m), "%s", tt.msg)
		s := &session{}
		if !tt.want {
			require.Error(t, s.relayClient(t.Context(), m), "%s is not sent", tt.msg)
		}
	}
}
