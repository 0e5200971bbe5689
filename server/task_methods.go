package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The tasks/* methods, in both wire formats (see tasks.go): tasks/get and
// tasks/cancel in both; tasks/result and tasks/list in 2025 sessions only
// (2026-07-28 requests get -32601 before they reach a handler);
// tasks/update in 2026-07-28 requests only.

func (s *Server) registerTasks() {
	s.handle("tasks/get", s.tasksGet)
	s.handle("tasks/result", s.tasksResult)
	s.handle("tasks/list", s.tasksList)
	s.handle("tasks/cancel", s.tasksCancel)
	s.handle("tasks/update", s.tasksUpdate)
}

// taskParams are the params of tasks/get, tasks/result, tasks/cancel and
// tasks/update.
type taskParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// tasksAvailable reports whether the tasks methods exist: the server
// declares tasks, or still keeps some.
func (s *Server) tasksAvailable() bool {
	return s.tasksEnabled() || len(s.tasks.all()) > 0
}

// taskMethodFound reports whether req's tasks/* method exists: in req's
// era, and while the server declares tasks or still keeps some.
func (s *Server) taskMethodFound(req *Request) bool {
	return req.era.taskMethod(req.Method) && s.tasksAvailable()
}

// taskRequest checks a tasks/* request that names a task, in this order:
// the method exists, the client may use tasks (a 2026-07-28 client must
// declare the extension), the params hold a taskId, and the task is one
// the requester may see: a 2025 session sees its own tasks, a 2026-07-28
// request the extension's, which belong to no session; in both, only the
// tasks its caller created (WithCallerKey), and for the methods that read
// or feed the task, only while the caller may use the task's tool
// (WithToolAccess). A task the requester may not see is answered exactly
// as an unknown one.
func (s *Server) taskRequest(req *Request) (*task, taskParams, error) {
	var p taskParams
	if !s.taskMethodFound(req) {
		return nil, p, Errorf(protocol.CodeMethodNotFound, "method not found: %s", req.Method)
	}
	if err := req.era.tasksRefused(req); err != nil {
		return nil, p, err
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.TaskID == "" {
		return nil, p, Errorf(protocol.CodeInvalidParams, "%s: params must be an object with a taskId string", req.Method)
	}
	t := s.tasks.get(p.TaskID)
	if t == nil || !sameOwner(t.owner, req.era.session()) || t.caller != s.callerKey(req) || !s.taskToolAllowed(req, t) {
		return nil, p, Errorf(protocol.CodeInvalidParams, "%s: unknown task %q (it may have expired)", req.Method, p.TaskID)
	}
	return t, p, nil
}

// taskToolAllowed reports whether req may see what t's tool produced: for
// tasks/get, tasks/result and tasks/update, the tool access check
// (WithToolAccess) of the tool as registered when t was created and, if
// one of that name is registered now, of that one too. tasks/cancel only
// stops the caller's own task, and passes.
func (s *Server) taskToolAllowed(req *Request, t *task) bool {
	if (s.cfg.toolAccess == nil && s.toolView.Load() == nil) || req.Method == "tasks/cancel" {
		return true
	}
	if t.tool == nil || !s.toolAllowed(req, t.tool) {
		return false
	}
	if rt := s.tools.lookup(t.tool.Name); rt != nil && &rt.tool != t.tool && !s.toolAllowed(req, &rt.tool) {
		return false
	}
	return true
}

func (s *Server) tasksGet(_ context.Context, req *Request) (any, error) {
	t, _, err := s.taskRequest(req)
	if err != nil {
		return nil, err
	}
	return req.era.taskStatus(t.view()), nil
}

// tasksResult answers tasks/result (2025): once the task is terminal,
// exactly what the tools/call would have answered, with the related-task
// _meta. A cancelled task has no result: -32602.
func (s *Server) tasksResult(ctx context.Context, req *Request) (any, error) {
	t, _, err := s.taskRequest(req)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.waiters = append(t.waiters, req.ID) // the task's messages now go to this request's stream
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		if i := slices.Index(t.waiters, req.ID); i >= 0 {
			t.waiters = slices.Delete(t.waiters, i, i+1)
		}
		t.mu.Unlock()
	}()
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	v := t.view()
	switch {
	case v.err != nil:
		return nil, &Error{Code: protocol.Code(v.err.Code), Message: v.err.Message, Data: v.err.Data}
	case v.result != nil:
		return setMeta(v.result, vocab.MetaRelatedTask, map[string]string{"taskId": v.id})
	default:
		return nil, Errorf(protocol.CodeInvalidParams, "tasks/result: task %q was cancelled: it has no result", v.id)
	}
}

// tasksList answers tasks/list (2025): the session's tasks that the caller
// created and may see (see taskRequest), oldest first, a page at a time.
func (s *Server) tasksList(_ context.Context, req *Request) (any, error) {
	if !s.taskMethodFound(req) {
		return nil, Errorf(protocol.CodeMethodNotFound, "method not found: %s", req.Method)
	}
	var p listParams
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, Errorf(protocol.CodeInvalidParams, "invalid tasks/list params: %v", err)
		}
	}
	owned := slices.DeleteFunc(s.tasks.owned(req.era.session(), s.callerKey(req)), func(t *task) bool { return !s.taskToolAllowed(req, t) })
	views := make([]taskView, len(owned))
	for i, t := range owned {
		views[i] = t.view()
	}
	key := func(v taskView) string { return v.created.UTC().Format("2006-01-02T15:04:05.000000000") + "/" + v.id }
	slices.SortFunc(views, func(a, b taskView) int { return strings.Compare(key(a), key(b)) })
	page, next, err := paginate(views, func(i int) string { return key(views[i]) }, p.Cursor, s.cfg.pageSize)
	if err != nil {
		return nil, err
	}
	tasks := make([]taskV1, len(page))
	for i, v := range page {
		tasks[i] = v.v1()
	}
	return struct {
		Tasks      []taskV1 `json:"tasks"`
		NextCursor string   `json:"nextCursor,omitempty"`
	}{tasks, next}, nil
}

// tasksCancel answers tasks/cancel: the task is cancelled before the
// answer. In 2025 the answer is the task, and a terminal task is -32602;
// the extension acknowledges with an empty result either way.
func (s *Server) tasksCancel(_ context.Context, req *Request) (any, error) {
	t, _, err := s.taskRequest(req)
	if err != nil {
		return nil, err
	}
	cancelled := s.cancelTask(t, fmt.Errorf("%w: tasks/cancel", ErrClientCancel), "The task was cancelled by request.")
	return req.era.taskCancelled(t, cancelled)
}

// tasksUpdate answers tasks/update (2026-07-28): the answers go to the
// task's pending questions; keys it does not wait for are ignored, and
// the answer is an empty acknowledgment.
func (s *Server) tasksUpdate(_ context.Context, req *Request) (any, error) {
	t, p, err := s.taskRequest(req)
	if err != nil {
		return nil, err
	}
	t.answer(p.InputResponses)
	return struct{}{}, nil
}

// Wire formats.

// taskV1 is a 2025-11-25 Task.
type taskV1 struct {
	TaskID        string     `json:"taskId"`
	Status        taskStatus `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	CreatedAt     string     `json:"createdAt"`
	LastUpdatedAt string     `json:"lastUpdatedAt"`
	TTL           *int64     `json:"ttl"` // null: unlimited
	PollInterval  int64      `json:"pollInterval,omitempty"`
}

// taskV2 is a task of the 2026-07-28 extension: the flat CreateTaskResult
// and the DetailedTask of tasks/get.
type taskV2 struct {
	ResultType     string                      `json:"resultType"`
	TaskID         string                      `json:"taskId"`
	Status         taskStatus                  `json:"status"`
	StatusMessage  string                      `json:"statusMessage,omitempty"`
	CreatedAt      string                      `json:"createdAt"`
	LastUpdatedAt  string                      `json:"lastUpdatedAt"`
	TTLMs          *int64                      `json:"ttlMs"` // null: unlimited
	PollIntervalMs int64                       `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage             `json:"result,omitempty"`
	Error          *transport.Error            `json:"error,omitempty"`
	InputRequests  map[string]inputRequestJSON `json:"inputRequests,omitempty"`
}

// typedTaskResult is a task's stored result as a 2026-07-28 result: every
// result of that revision carries resultType, and a client checks the one
// inside a completed task as it checks an immediate one. A result that
// already names its type, or is not an object, is kept as it is.
func typedTaskResult(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || raw[0] != '{' {
		return raw
	}
	typed := false
	jsonscan.EachMember(raw, func(key, _ []byte) { typed = typed || string(key) == "resultType" })
	if typed {
		return raw
	}
	rest := bytes.TrimLeft(raw[1:], " \t\r\n")
	out := make([]byte, 0, len(raw)+len(`"resultType":"complete",`))
	out = append(out, `{"resultType":"complete"`...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// taskTime formats a task's timestamp: ISO 8601 in UTC, to the
// millisecond.
func taskTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// millis is d in whole milliseconds (at least 1), nil for 0.
func millis(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	ms := max(d.Milliseconds(), 1)
	return &ms
}

func (v taskView) v1() taskV1 {
	poll := millis(v.poll)
	return taskV1{
		TaskID: v.id, Status: v.status, StatusMessage: v.message,
		CreatedAt: taskTime(v.created), LastUpdatedAt: taskTime(v.updated),
		TTL: millis(v.ttl), PollInterval: *poll,
	}
}

func (v taskView) base2026(resultType string) taskV2 {
	return taskV2{
		ResultType: resultType, TaskID: v.id, Status: v.status, StatusMessage: v.message,
		CreatedAt: taskTime(v.created), LastUpdatedAt: taskTime(v.updated),
		TTLMs: millis(v.ttl), PollIntervalMs: *millis(v.poll),
	}
}

// created2026 is the CreateTaskResult: the task alone.
func (v taskView) created2026() taskV2 { return v.base2026("task") }

// detailed2026 is the answer to tasks/get: the task plus, by status, its
// result, its error or its pending questions.
func (v taskView) detailed2026() taskV2 {
	d := v.base2026("complete")
	switch v.status {
	case statusCompleted:
		d.Result = typedTaskResult(v.result)
	case statusFailed:
		d.Error = v.err
		if d.Error == nil {
			d.Error = &transport.Error{Code: int64(protocol.CodeInternal), Message: "internal error"}
		}
	case statusInputRequired:
		d.InputRequests = v.requests
	}
	return d
}
