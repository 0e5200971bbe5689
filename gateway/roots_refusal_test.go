package gateway_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// An upstream's roots/list that the gateway cannot pass on is refused
// -32600 with a message that says why: no client to ask (the gateway's
// own listing session), or a client that declared no roots; never a bare
// code.
func TestRootsRefusalSaysWhy(t *testing.T) {
	t.Parallel()
	noClient, undeclared := gateway.Refusals(t.Context(), "roots/list")
	for _, tt := range []struct {
		err error
		why string
	}{
		{noClient, "the gateway has no client to ask roots/list of: this upstream session serves none"},
		{undeclared, "the gateway's client declared no roots capability"},
	} {
		e, ok := errors.AsType[*transport.Error](tt.err)
		if assert.True(t, ok, "%T %v", tt.err, tt.err) {
			assert.Equal(t, int64(protocol.CodeInvalidRequest), e.Code)
			assert.Contains(t, e.Message, tt.why)
		}
	}
}
