package streamable_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestWriteError: a refusal in front of an Endpoint is its status and a
// JSON-RPC error with a null id, not to be stored, the headers set before
// kept.
func TestWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope"`)
	streamable.WriteError(rec, http.StatusForbidden, protocol.CodeInvalidRequest, "insufficient_scope: a b")
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"insufficient_scope: a b"}}`, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	assert.Equal(t, `Bearer error="insufficient_scope"`, rec.Header().Get("WWW-Authenticate"))
}
