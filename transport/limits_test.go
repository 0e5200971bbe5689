package transport_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestDecodeBoundsMethodAndID sends the long methods and ids of a name
// bomb: each is an invalid request, a long id is answered with id null, and
// the longest accepted forms still decode.
func TestDecodeBoundsMethodAndID(t *testing.T) {
	t.Parallel()
	longMethod := strings.Repeat("m", 1<<20)
	longID := strings.Repeat("i", 257)
	tests := []struct {
		name   string
		in     string
		wantID transport.ID
	}{
		{"method of 129 bytes", `{"jsonrpc":"2.0","id":7,"method":"` + strings.Repeat("m", 129) + `"}`, transport.Int64ID(7)},
		{"method of 1 MiB", `{"jsonrpc":"2.0","id":"a","method":"` + longMethod + `"}`, transport.StringID("a")},
		{"method of 1 MiB, notification", `{"jsonrpc":"2.0","method":"` + longMethod + `"}`, transport.ID{}},
		{"escaped method over the bound", `{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat(`\u00e9`, 65) + `"}`, transport.Int64ID(1)},
		{"request id of 257 bytes", `{"jsonrpc":"2.0","id":"` + longID + `","method":"ping"}`, transport.ID{}},
		{"request id of 1 MiB", `{"jsonrpc":"2.0","id":"` + longMethod + `","method":"ping"}`, transport.ID{}},
		{"response id of 257 bytes", `{"jsonrpc":"2.0","id":"` + longID + `","result":{}}`, transport.ID{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, decode := range []func([]byte) (transport.Message, error){transport.DecodeMessage, transport.DecodeOwnedMessage} {
				m, err := decode([]byte(tt.in))
				require.Nil(t, m)
				de, ok := errors.AsType[*transport.DecodeError](err)
				require.True(t, ok, "%v", err)
				assert.Equal(t, protocol.CodeInvalidRequest, de.Code)
				assert.Equal(t, protocol.RejectInvalidRequest, de.Reason())
				assert.Equal(t, tt.wantID, de.ID)
				assert.Less(t, len(de.Error()), 200, "the error text does not carry the client's bytes")
			}
		})
	}
	// The longest accepted.
	m, err := transport.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":"` + longID[:256] + `","method":"` + strings.Repeat("m", 128) + `"}`))
	require.NoError(t, err)
	req := m.(*transport.Request)
	assert.Equal(t, transport.StringID(longID[:256]), req.ID)
	assert.Len(t, req.Method, 128)
}
