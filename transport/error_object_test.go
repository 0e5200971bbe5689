package transport_test

import (
	"errors"
	"testing"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// Regressions found by review and fuzzing: an error object's code and message
// may not be null.
func TestDecodeMessageNullErrorFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantMsg string
	}{
		{
			name:    "null error code",
			in:      `{"jsonrpc":"2.0","id":1,"error":{"code":null,"message":"m"}}`,
			wantMsg: "error code must be an integer",
		},
		{
			name:    "null error message",
			in:      `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":null}}`,
			wantMsg: "error message must be a string",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			msg, err := transport.DecodeMessage([]byte(tc.in))
			require.Error(t, err, "decoded as %#v", msg)
			de, ok := errors.AsType[*transport.DecodeError](err)
			require.True(t, ok, "%v is %T", err, err)
			assert.Equal(t, protocol.CodeInvalidRequest, de.Code)
			assert.Equal(t, transport.Int64ID(1), de.ID)
			assert.Equal(t, tc.wantMsg, de.Err.Error())
		})
	}
}

func TestAppendMessageRejectsNil(t *testing.T) {
	t.Parallel()
	for name, m := range map[string]transport.Message{
		"nil request":           (*transport.Request)(nil),
		"nil response":          (*transport.Response)(nil),
		"nil response in batch": transport.ResponseBatch{nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := transport.AppendMessage(nil, m)
			require.Error(t, err)
		})
	}
}
