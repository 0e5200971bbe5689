package server

import (
	"context"
	"encoding/json"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// sessionEra speaks for a request of the initialize era (protocol versions
// up to 2025-11-25): it belongs to the session it arrived on, which the
// client opened with initialize. Questions to the client are
// server-to-client requests on that session, and tasks are the 2025-11-25
// tasks the session owns.
type sessionEra struct{ ss *Session }

// session is the session the request arrived on.
func (e sessionEra) session() *Session { return e.ss }

// callClient sends the request on the session and waits for the answer;
// in a task, the task is input_required meanwhile (tasks.go).
func (e sessionEra) callClient(ctx context.Context, _ *Request, method string, params, result any) error {
	if t := taskOf(ctx); t != nil {
		return e.ss.srv.askInSession(ctx, t, e.ss, method, params, result)
	}
	return e.ss.Call(ctx, method, params, result)
}

// capabilityError is err itself: Session.Call refuses alike.
func (sessionEra) capabilityError(err error, _ map[string]any) error { return err }

// interrupted passes the interruption on: nothing in a session asks for
// input by input_required rounds.
func (sessionEra) interrupted(err error) (any, error) { return nil, err }

// decorate leaves the result as the handler made it.
func (sessionEra) decorate(_ string, raw json.RawMessage) (json.RawMessage, error) { return raw, nil }

// toolTask runs the call as a 2025-11-25 task when the client asks for one
// with params.task and the tool supports tasks.
func (e sessionEra) toolTask(ctx context.Context, rt *registeredTool, call *CallToolRequest) (bool, any, error) {
	s, req := e.ss.srv, call.Request
	support := taskSupportOf(rt.tool.Execution)
	asked, ttl, err := taskParam(req)
	switch {
	case err != nil:
		return true, nil, err
	case asked && support == TaskSupportForbidden && s.tasksEnabled():
		return true, nil, Errorf(protocol.CodeMethodNotFound, "tool %q does not support tasks: call it without params.task", call.Name)
	case !asked && support == TaskSupportRequired:
		return true, nil, Errorf(protocol.CodeMethodNotFound, "tool %q must be called as a task: add params.task", call.Name)
	case !asked || support == TaskSupportForbidden:
		return false, nil, nil // without a tasks capability, params.task is ignored
	}
	t, err := s.newTask(ctx, req, s.taskTTL(ttl))
	if err != nil {
		return true, nil, err
	}
	s.launchAfterResponse(req, t, func(ctx context.Context) (*CallToolResult, error) { return rt.handler(ctx, call) })
	return true, struct {
		Task taskV1 `json:"task"`
	}{t.view().v1()}, nil
}

// taskContext makes the session the task's owner; the request's progress
// token stays valid for the task's lifetime.
func (e sessionEra) taskContext(ctx, base context.Context, _ *Request, t *task) context.Context {
	t.owner = e.ss
	if st, _ := ctx.Value(progressKey{}).(*progressState); st != nil {
		t.prog = &progressState{token: st.token, interval: st.interval}
		base = context.WithValue(base, progressKey{}, t.prog)
	}
	return base
}

// taskMethod: tasks/update belongs to the 2026-07-28 extension.
func (sessionEra) taskMethod(method string) bool { return method != "tasks/update" }

// tasksRefused: a session may use tasks once the server declares them.
func (sessionEra) tasksRefused(*Request) error { return nil }

// taskStatus is the 2025-11-25 Task.
func (sessionEra) taskStatus(v taskView) any { return v.v1() }

// taskCancelled answers with the task; a task that was already terminal
// is -32602.
func (sessionEra) taskCancelled(t *task, cancelled bool) (any, error) {
	v := t.view()
	if !cancelled {
		return nil, Errorf(protocol.CodeInvalidParams, "cannot cancel task %q: already in terminal status %q", v.id, v.status)
	}
	return v.v1(), nil
}
