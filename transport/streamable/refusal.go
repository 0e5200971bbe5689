package streamable

import (
	"net/http"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// WriteError answers a request to an MCP endpoint that a handler in
// front of its Endpoint refuses (an OAuth guard, a router of named
// endpoints) in the form the Endpoint refuses one: status, and a JSON-RPC
// error object with a null id, code and msg as its body
// (application/json), not to be stored (Cache-Control: no-store: a
// refusal may depend on the credentials). Headers the refusal needs
// (WWW-Authenticate, Retry-After) are set before.
func WriteError(w http.ResponseWriter, status int, code protocol.Code, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	writeError(w, status, transport.ID{}, code, msg)
}
