package debugpage

import "github.com/vigil-mcp/vigil/server"

// toolRegistered reports whether srv has a tool of that name now, which
// tells a registered tool from a name a client made up.
func toolRegistered(srv *server.Server, name string) bool {
	_, ok := srv.Tool(name)
	return ok
}
