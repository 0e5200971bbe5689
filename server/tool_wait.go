package server

import (
	"context"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// SetToolWait makes a tools/call of a tool that is not registered wait
// for wait(ctx, name) before it is answered: when wait returns nil the
// tool is looked up again (a call of a tool still unknown is answered as
// one, and one WithToolAccess or SetToolView refuses, as for any tool);
// when it returns an error, the call is answered with it, as a handler's
// error (a [*Error] as it is). A call of a registered tool never waits. A
// gateway sets one so that a call of a tool of a server it fronts that is
// still starting waits for that server's tools instead of being answered
// as unknown; wait must return within a bound of its own, and at once for
// a name it knows nothing of. wait must be safe for concurrent use; nil
// removes it. It is safe for concurrent use.
func (s *Server) SetToolWait(wait func(ctx context.Context, name string) error) {
	if wait == nil {
		s.toolWait.Store(nil)
		return
	}
	s.toolWait.Store(&wait)
}

// awaitTool returns the tool name for req once SetToolWait's wait says it
// may be registered, when it is not yet: nil when it is still unknown or
// refused, or wait's error. A 2026-07-28 call's Mcp-Param-* headers are
// checked against the tool found, as they are at admission for a tool
// registered then.
func (s *Server) awaitTool(ctx context.Context, req *Request, name string) (*registeredTool, error) {
	wait := s.toolWait.Load()
	if wait == nil || s.tools.lookup(name) != nil {
		return nil, nil // registered, and refused to req; or no wait
	}
	if err := (*wait)(ctx, name); err != nil {
		return nil, err
	}
	rt := s.lookupFor(req, name)
	if _, stateless := req.era.(*statelessEra); rt != nil && stateless {
		if why := s.checkParamHeaders(ctx, req); why != "" {
			return nil, Errorf(protocol.CodeHeaderMismatch, "%s", why)
		}
	}
	return rt, nil
}
