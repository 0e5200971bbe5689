package streamable

import (
	"net/http"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/transport"
)

// UseStateless makes the connection send the headers of 2026-07-28
// requests of version from now on ("": the session era's again).
func (c *clientConn) UseStateless(version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stateless = version
}

// statelessHeaders sets on r, the POST of req (nil for a response), the
// headers a 2026-07-28 request carries: the version, the method and, for
// the methods that name a tool, prompt, resource or task, that name.
func (c *clientConn) statelessHeaders(r *http.Request, req *transport.Request) {
	c.mu.Lock()
	version := c.stateless
	c.mu.Unlock()
	if version == "" || req == nil {
		return
	}
	r.Header.Set(headerProtocolVersion, version)
	r.Header.Set(headerMethod, req.Method)
	var key string
	switch req.Method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		key = "taskId"
	default:
		return
	}
	// The member alone, found without decoding params (a call's
	// arguments) a second time.
	var val [1][]byte
	if jsonscan.SplitObjectInto(val[:], req.Params, key) {
		if v, ok := jsonscan.DecodeString(val[0]); ok {
			r.Header.Set(headerName, v)
		}
	}
}
