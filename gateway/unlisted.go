package gateway

import (
	"context"
	"errors"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// readUnlisted reads a URI that nothing registered serves: a resource an
// upstream serves without listing it, such as one a caller's session made
// (server-everything's gzip-file-as-resource), which only the caller's own
// upstream session knows. Each upstream that declares resources is asked
// in turn, on the caller's session, and the first that does not answer
// "not found" answers; when none knows the URI, neither does the server.
func (g *Gateway) readUnlisted(ctx context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
	for _, m := range g.mounts {
		if !m.readable.Load() {
			continue
		}
		res, err := m.readResource(ctx, req)
		if notFound(err) {
			continue
		}
		return res, err
	}
	return nil, server.ErrResourceNotFound
}

// notFound reports whether err is an upstream's answer that it serves no
// such resource: -32002, or the -32602 of the 2026-07-28 era.
func notFound(err error) bool {
	var se *server.Error
	return errors.As(err, &se) && (se.Code == protocol.CodeResourceNotFound || se.Code == protocol.CodeInvalidParams)
}
