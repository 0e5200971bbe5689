package server

import (
	"context"
	"encoding/json"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// cacheable lists the methods whose 2026-07-28 results carry cache hints
// (ttlMs, cacheScope).
var cacheable = map[string]bool{
	"server/discover": true, "tools/list": true, "prompts/list": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"skills/list": true, "skills/get": true,
}

// era speaks for the protocol era of one request. Two eras are served:
//
//   - the session era (era_session.go), up to protocol version 2025-11-25:
//     the request belongs to the session it arrived on, which the client
//     opens with initialize; questions to the client are server-to-client
//     requests on it, and tasks are the session's 2025-11-25 tasks;
//   - the stateless era (era_stateless.go), 2026-07-28: the request
//     carries its protocol version and client capabilities in _meta and
//     belongs to no session; questions to the client become input_required
//     results, and tasks are those of the tasks extension.
//
// The era is chosen once, when the request is read (eraOf); from then on
// the core asks it, never the request, whatever differs between eras. A
// new protocol revision is a new implementation.
type era interface {
	// session returns the session the request belongs to, which owns its
	// tasks and hears what it notifies; nil when it belongs to none.
	session() *Session
	// callClient asks the client method on behalf of req's handler, whose
	// context ctx is (see CallClient).
	callClient(ctx context.Context, req *Request, method string, params, result any) error
	// capabilityError refuses a call to the client that needs a client
	// capability the client did not declare: err says why, and need is
	// that capability as ClientCapabilities JSON.
	capabilityError(err error, need map[string]any) error
	// interrupted answers a request whose handler stopped for input from
	// the client: err is an *inputRequired or an *InputRequired.
	interrupted(err error) (any, error)
	// decorate adds to the encoded result of method what every result of
	// the era carries.
	decorate(method string, raw json.RawMessage) (json.RawMessage, error)

	// toolTask decides whether a tools/call runs as a task and, when the
	// answer is not "as usual", handles it: handled is false when callTool
	// should run the handler synchronously itself.
	toolTask(ctx context.Context, rt *registeredTool, call *CallToolRequest) (handled bool, res any, err error)
	// taskContext prepares the context a new task of req runs with, from
	// base, the request's context without its cancellation.
	taskContext(ctx, base context.Context, req *Request, t *task) context.Context
	// taskMethod reports whether the tasks/* method exists.
	taskMethod(method string) bool
	// tasksRefused says why req may not use tasks at all, or nil.
	tasksRefused(req *Request) error
	// taskStatus answers tasks/get.
	taskStatus(v taskView) any
	// taskCancelled answers tasks/cancel for t; cancelled is whether it
	// was still running.
	taskCancelled(t *task, cancelled bool) (any, error)
}

// eraOf chooses the era that speaks for req, once, when req is read: a
// request whose _meta names a protocol version on a session that was
// never initialized (fresh) is a stateless request; any other belongs to the
// session it arrived on.
func (ss *Session) eraOf(req *Request, fresh bool, stateless *statelessEra) era {
	if fresh {
		if raw, ok := req.Meta.Get(vocab.MetaProtocolVersion); ok {
			if stateless == nil {
				stateless = new(statelessEra)
			}
			return ss.srv.newStatelessEra(ss.ctx, req, raw, stateless)
		}
	}
	return sessionEra{ss: ss}
}

// discover answers server/discover: the versions, capabilities and
// instructions of this server.
func (s *Server) discover(context.Context, *Request) (any, error) {
	caps := s.capabilities()
	s.withTasksExtension(&caps) // tasks.go
	return struct {
		ResultType        string             `json:"resultType"`
		SupportedVersions []string           `json:"supportedVersions"`
		Capabilities      serverCapabilities `json:"capabilities"`
		Instructions      string             `json:"instructions,omitempty"`
	}{"complete", protocol.Versions(), caps, s.Instructions()}, nil
}
