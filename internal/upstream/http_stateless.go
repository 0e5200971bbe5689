package upstream

import (
	"encoding/json"
	"net/http"

	"github.com/vigil-mcp/vigil/transport"
)

// The headers of a 2026-07-28 request besides Mcp-Protocol-Version.
const (
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"
)

// headerKey keys the Notes.Header of the request whose Write's context
// carries it.
type headerKey struct{}

// useStateless makes the connection send the headers of 2026-07-28
// requests of version from now on ("": the session era's again).
func (c *httpConn) useStateless(version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stateless = version
}

// statelessHeaders sets on r, the POST of req (nil for a response), the
// headers a 2026-07-28 request carries: the version, the method and, for
// the methods that name a tool, prompt, resource or task, that name.
func (c *httpConn) statelessHeaders(r *http.Request, req *transport.Request) {
	c.mu.Lock()
	version := c.stateless
	c.mu.Unlock()
	if version == "" || req == nil {
		return
	}
	r.Header.Set(headerProtocol, version)
	r.Header.Set(headerMethod, req.Method)
	var p struct {
		Name   string `json:"name"`
		URI    string `json:"uri"`
		TaskID string `json:"taskId"`
	}
	switch req.Method {
	case "tools/call", "prompts/get":
		if json.Unmarshal(req.Params, &p) == nil {
			r.Header.Set(headerName, p.Name)
		}
	case "resources/read":
		if json.Unmarshal(req.Params, &p) == nil {
			r.Header.Set(headerName, p.URI)
		}
	case "tasks/get", "tasks/update", "tasks/cancel":
		if json.Unmarshal(req.Params, &p) == nil {
			r.Header.Set(headerName, p.TaskID)
		}
	}
}
