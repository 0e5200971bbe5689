package server

import "context"

// policed wraps the handler of tool t so that the server's tool policy
// (WithToolPolicy) decides each call before h runs; without one it returns
// h. addTool puts it inside validatingArguments, so that the policy sees
// valid arguments only.
func (s *Server) policed(t *Tool, h ToolHandler) ToolHandler {
	check := s.cfg.toolPolicy
	if check == nil {
		return h
	}
	return func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		if err := check(ctx, req, t); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}
