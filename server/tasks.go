package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Tasks: a tools/call that runs in the background. The package doc
// (Tasks) describes the two wire formats and the engine they share
// (task_store.go).

// ExtensionTasks is the identifier of the 2026-07-28 tasks extension, in
// capabilities.extensions.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// The values of [ToolExecution].TaskSupport.
const (
	TaskSupportForbidden = "forbidden" // never a task (the default)
	TaskSupportOptional  = "optional"  // a task when the client wants one
	TaskSupportRequired  = "required"  // only as a task
)

type taskKey struct{}

// taskOf returns the task whose handler's context ctx is, or nil.
func taskOf(ctx context.Context) *task {
	t, _ := ctx.Value(taskKey{}).(*task)
	return t
}

// TaskIDFromContext returns the id of the task whose handler's context ctx
// is, or "" outside a task.
func TaskIDFromContext(ctx context.Context) string {
	if t := taskOf(ctx); t != nil {
		return t.id
	}
	return ""
}

// taskSupportOf reads a tool's task support; anything unknown is
// forbidden.
func taskSupportOf(e *ToolExecution) string {
	if e != nil && (e.TaskSupport == TaskSupportOptional || e.TaskSupport == TaskSupportRequired) {
		return e.TaskSupport
	}
	return TaskSupportForbidden
}

// tasksEnabled reports whether some registered tool supports tasks: the
// server then declares them.
func (s *Server) tasksEnabled() bool {
	s.tools.mu.RLock()
	defer s.tools.mu.RUnlock()
	for _, rt := range s.tools.all() {
		if taskSupportOf(rt.tool.Execution) != TaskSupportForbidden {
			return true
		}
	}
	return false
}

// tasksCapability is the 2025-11-25 server capability (a tool supports
// tasks).
func tasksCapability() map[string]any {
	empty := map[string]any{}
	return map[string]any{"list": empty, "cancel": empty, "requests": map[string]any{"tools": map[string]any{"call": empty}}}
}

// withTasksExtension adapts the capabilities to server/discover
// (2026-07-28): no tasks slot, the extension instead.
func (s *Server) withTasksExtension(caps *serverCapabilities) {
	caps.Tasks = nil
	if !s.tasksEnabled() {
		return
	}
	ext := maps.Clone(caps.Extensions)
	if ext == nil {
		ext = map[string]any{}
	}
	ext[ExtensionTasks] = map[string]any{}
	caps.Extensions = ext
}

// wantsTasks reports whether a stateless request's client declared the
// tasks extension.
func wantsTasks(req *Request) bool {
	v, ok := req.ClientCapabilities.Extensions[ExtensionTasks]
	return ok && v != nil
}

// missingTasksExtension refuses a 2026-07-28 request that needs the client
// to declare the tasks extension.
func missingTasksExtension(what string) *Error {
	e := Errorf(protocol.CodeMissingRequiredClientCapability, "%w: %s needs the client's %q extension", ErrCapability, what, ExtensionTasks)
	e.Data, _ = json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}}})
	return e
}

// deferredTask runs the handler of a Deferred tool as for a synchronous
// call; if it calls RunAsTask, the answer is the task RunAsTask created.
func (s *Server) deferredTask(ctx context.Context, rt *registeredTool, call *CallToolRequest) (bool, any, error) {
	plan := &taskPlan{srv: s, req: call.Request}
	launched := false
	defer func() {
		// The handler swallowed RunAsTask's answer, or panicked: nobody
		// will learn of the task.
		if t, _ := plan.take(); t != nil && !launched {
			s.discardTask(t, errors.New("mcp: the handler did not return RunAsTask's result"))
		}
	}()
	res, err := rt.handler(context.WithValue(ctx, taskPlanKey{}, plan), call)
	if t, run := plan.take(); t != nil {
		if _, ok := errors.AsType[*taskStarted](err); ok {
			launched = true
			s.launchAfterResponse(call.Request, t, run)
			return true, t.view().created2026(), nil
		}
	}
	if res, err = toolOutcome(ctx, res, err); err != nil {
		return true, nil, err
	}
	return true, res, nil
}

// taskParam reads the params.task of a 2025 tools/call: whether the client
// asked for a task, and the ttl it asked for (0: none).
func taskParam(req *Request) (asked bool, ttl time.Duration, err error) {
	if !req.parsed {
		return false, 0, nil // callTool has refused these params already
	}
	raw := bytes.TrimSpace(req.task)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return false, 0, nil
	}
	var m struct {
		TTL *float64 `json:"ttl"`
	}
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil || m.TTL != nil && (*m.TTL < 0 || *m.TTL > math.MaxInt64/float64(time.Millisecond)) {
		return false, 0, Errorf(protocol.CodeInvalidParams, "tools/call: task must be an object {\"ttl\"?: milliseconds}")
	}
	if m.TTL != nil {
		ttl = time.Duration(*m.TTL * float64(time.Millisecond))
	}
	return true, ttl, nil
}

// taskTTL is the TTL of a task whose client asked for requested (0: no
// request): the server's TTL, or less if asked.
func (s *Server) taskTTL(requested time.Duration) time.Duration {
	limit := s.cfg.tasks.ttl
	if requested > 0 && (limit == 0 || requested < limit) {
		return requested
	}
	return limit
}

// newTask creates and stores the task of req, not yet started. Its
// context keeps ctx's values (the request, for [RequestFromContext],
// [ClientLogger] and the client calls) but not its cancellation.
func (s *Server) newTask(ctx context.Context, req *Request, ttl time.Duration) (*task, error) {
	now := time.Now()
	t := &task{
		id: s.cfg.tasks.idPrefix + newTaskID(), created: now, updated: now, ttl: ttl, poll: s.cfg.tasks.poll,
		status: statusWorking, done: make(chan struct{}),
		caller: s.callerKey(req),
	}
	if s.cfg.tasks.perCaller > 0 {
		t.quota = s.cfg.tasks.quotaKey(req)
	}
	if rt := s.tools.lookup(req.Name); rt != nil {
		t.tool = &rt.tool
	}
	base := context.WithoutCancel(ctx)
	base = context.WithValue(base, taskPlanKey{}, (*taskPlan)(nil))
	base = context.WithValue(base, inputKeyKey{}, nil) // keys name the task's own questions
	// The era sets the owner, and what the task sees of the request.
	base = req.era.taskContext(ctx, base, req, t)
	t.ctx, t.cancel = context.WithCancelCause(context.WithValue(base, taskKey{}, t))
	if err := s.tasks.add(t, s.cfg.tasks.max, s.cfg.tasks.perCaller); err != nil {
		t.cancel(err)
		return nil, err
	}
	s.tasks.watch(t, func() { s.endTask(t, ErrTaskExpired, "The task expired.") }, func() {
		cause := context.Cause(t.owner.ctx)
		if errors.Is(cause, transport.ErrReleased) {
			// The replica let its view of a shared session go (a running
			// task holds it, so as a rule the task is done, unless the
			// replica is leaving, when Shutdown drains it): the session
			// goes on, and the task stays for its TTL.
			return
		}
		s.endTask(t, cause, "The session ended.")
	})
	s.cfg.logger.Debug("task created", "task", t.id, "tool", req.Name, "session", req.Session.ID(), "ttl_seconds", ttl.Seconds())
	return t, nil
}

// launchAfterResponse starts t's handler once the response that creates
// the task is written, so that the client knows the task before anything
// about it; if that response is not delivered, nobody will learn of the
// task, and it is dropped.
func (s *Server) launchAfterResponse(req *Request, t *task, run func(context.Context) (*CallToolResult, error)) {
	req.ends.OnDone(func(out Outcome) {
		switch {
		case out.Dropped != protocol.DropNone || out.Err != nil:
			s.discardTask(t, fmt.Errorf("mcp: the response creating the task was not delivered: %w", context.Canceled))
		case t.ctx.Err() != nil: // cancelled before it started
			s.tasks.release()
		default:
			release := t.hold()
			go func() {
				defer release()
				s.runTask(t, run)
			}()
		}
	})
}

// hold keeps the replica serving a shared 2025 session's view while the
// task runs here (see transport.Shared's Hold); a no-op otherwise.
func (t *task) hold() (release func()) {
	if t.owner == nil || t.owner.shared == nil {
		return func() {}
	}
	return t.owner.shared.Hold()
}

// discardTask deletes a task whose handler never started.
func (s *Server) discardTask(t *task, cause error) {
	s.tasks.remove(t)
	t.setStatus(statusCancelled, "")
	t.settle()
	t.cancel(cause)
	s.tasks.release()
}

// runTask runs t's handler on its own goroutine and records the outcome.
func (s *Server) runTask(t *task, run func(context.Context) (*CallToolResult, error)) {
	defer s.tasks.release()
	res, err := s.callTaskHandler(t, run)
	if t.prog != nil {
		t.prog.mu.Lock()
		t.prog.done = true
		t.prog.mu.Unlock()
	}
	var view taskView
	var changed bool
	switch {
	case err != nil && t.ctx.Err() != nil:
		view, changed = t.setStatus(statusCancelled, "The task was cancelled.")
	case err != nil:
		werr := wireError(err)
		view, changed = t.finish(statusFailed, nil, werr, "The task failed: "+werr.Message)
	default:
		raw, merr := res.marshal()
		if limit := t.maxResult(s.cfg.maxResultBytes); merr == nil && limit > 0 && len(raw) > limit {
			// Kept for the task's life: bounded as a call's answer is.
			s.cfg.logger.Warn("a task's result is over its bound: a tool error instead", "task", t.id, "bytes", len(raw), "limit", limit)
			res = resultTooLarge(len(raw), limit)
			raw, merr = json.Marshal(res)
		}
		switch {
		case merr != nil:
			s.cfg.logger.Error("cannot encode a task's result", "task", t.id, "error", merr)
			view, changed = t.finish(statusFailed, nil, wireError(merr), "The task failed: internal error")
		case res.IsError && !t.v2():
			// 2025-11-25: a tool error fails the task (its result stays
			// available); the extension calls that completed.
			view, changed = t.finish(statusFailed, raw, nil, "The tool reported an error.")
		default:
			view, changed = t.finish(statusCompleted, raw, nil, "")
		}
	}
	if changed {
		s.cfg.logger.Debug("task finished", "task", t.id, "status", string(view.status))
		s.notifyTaskStatus(t, view)
	}
	t.settle()
}

// callTaskHandler runs the handler, turning a panic into protocol.CodeInternal.
func (s *Server) callTaskHandler(t *task, run func(context.Context) (*CallToolResult, error)) (res *CallToolResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			s.cfg.logger.ErrorContext(t.ctx, "task handler panicked", "task", t.id, "panic", v, "stack", string(stack))
			s.obs.HandlerPanicked(t.ctx, RequestFromContext(t.ctx), v, stack)
			res, err = nil, &Error{Code: protocol.CodeInternal, Message: "internal error", err: fmt.Errorf("panic: %v", v)}
		}
	}()
	res, err = run(t.ctx)
	return toolOutcome(t.ctx, res, err)
}

// cancelTask moves t to cancelled, then cancels its context with cause;
// it reports whether t was still running.
func (s *Server) cancelTask(t *task, cause error, message string) bool {
	view, ok := t.setStatus(statusCancelled, message)
	if !ok {
		return false
	}
	t.cancel(cause)
	s.cfg.logger.Debug("task cancelled", "task", t.id, "cause", cause)
	s.notifyTaskStatus(t, view)
	t.settle()
	return true
}

// endTask deletes t (its TTL ran out, or its session ended), canceling it
// with cause if it still runs.
func (s *Server) endTask(t *task, cause error, message string) {
	if !s.tasks.remove(t) {
		return
	}
	t.setStatus(statusCancelled, message) // nobody can see it any more: no notification
	t.settle()
	t.cancel(cause)
	s.cfg.logger.Debug("task deleted", "task", t.id, "cause", cause)
}

// drainTasks waits for the running tasks to finish; when ctx is done
// first, it cancels them with ErrShutdown and returns ctx's error. Either
// way the store is closed (Server.Shutdown).
func (s *Server) drainTasks(ctx context.Context) error {
	defer s.forgetTasks()
	select {
	case <-s.tasks.idleChan():
		return nil
	case <-ctx.Done():
		cause := fmt.Errorf("%w: %w", ErrShutdown, context.Cause(ctx))
		for _, t := range s.tasks.all() {
			s.cancelTask(t, cause, "The server shut down.")
		}
		return ctx.Err()
	}
}

// closeTasks cancels every running task with ErrShutdown, waits for their
// handlers to return and closes the store (Server.Close).
func (s *Server) closeTasks() {
	s.forgetTasks()
	<-s.tasks.idleChan()
}

// forgetTasks closes the store: no new tasks; the stored ones are
// cancelled if running and deleted.
func (s *Server) forgetTasks() {
	for _, t := range s.tasks.close() {
		s.endTask(t, ErrShutdown, "The server shut down.")
	}
}

// notifyTaskStatus tells a 2025 task's session that its status changed
// (best effort). The extension's notifications/tasks travel on listen
// streams only; Vigil does not send them.
func (s *Server) notifyTaskStatus(t *task, view taskView) {
	if t.owner == nil {
		return
	}
	_ = t.owner.Notify(context.Background(), "notifications/tasks/status", view.v1())
}

// Deferred task creation: RunAsTask in the handler of a Deferred tool.

type taskPlanKey struct{}

// taskPlan lets the handler of a Deferred tool create its task, once, and
// only while the handler runs.
type taskPlan struct {
	srv *Server
	req *Request

	mu     sync.Mutex
	closed bool // the handler returned: too late for a task
	task   *task
	run    func(context.Context) (*CallToolResult, error)
}

// take closes the plan and returns the task RunAsTask created, if any.
func (p *taskPlan) take() (*task, func(context.Context) (*CallToolResult, error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return p.task, p.run
}

// taskStarted interrupts the handler of a Deferred tool once RunAsTask
// created its task; callTool answers with the task.
type taskStarted struct{ id string }

func (e *taskStarted) Error() string { return "mcp: the request continues as task " + e.id }

func (e *taskStarted) Unwrap() error { return errInterrupt }

// RunAsTask runs fn as the task of the tools/call whose handler's context
// ctx is: it is how a tool with [ToolExecution].Deferred set turns into a
// task once it has done its synchronous part, typically gathering input by
// 2026-07-28 input_required rounds (the package doc shows such a handler).
// Return what it returns as is. When the call is to become a task (a
// Deferred tool with task support, called by a client that declared
// [ExtensionTasks]), RunAsTask creates the task, which starts fn on its
// own goroutine once the client has the task's id, and returns an error
// that the core turns into the task's creation result. In every other case
// (inside a task, a call that stays synchronous, a second RunAsTask in one
// call) fn runs at once, on the caller's goroutine, with ctx, and RunAsTask
// returns what it returns, so that the same handler serves every era. A
// store full of running tasks makes RunAsTask fail with
// [protocol.CodeServerBusy].
func RunAsTask(ctx context.Context, fn func(ctx context.Context) (*CallToolResult, error)) (*CallToolResult, error) {
	if fn == nil {
		return nil, errors.New("mcp: RunAsTask: nil function")
	}
	plan, _ := ctx.Value(taskPlanKey{}).(*taskPlan)
	if taskOf(ctx) != nil || plan == nil {
		return fn(ctx)
	}
	plan.mu.Lock()
	if plan.closed || plan.task != nil {
		plan.mu.Unlock()
		return fn(ctx)
	}
	t, err := plan.srv.newTask(ctx, plan.req, plan.srv.cfg.tasks.ttl)
	if err == nil {
		plan.task, plan.run = t, fn
	}
	plan.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return nil, &taskStarted{id: t.id}
}

// Input inside a task.

// askInSession is a 2025 task's call to the client: a server-to-client
// request on its session (tagged with the related-task _meta by
// Session.Call), with the task input_required until the client answers.
func (s *Server) askInSession(ctx context.Context, t *task, ss *Session, method string, params, result any) error {
	s.taskAsking(t, +1)
	defer s.taskAsking(t, -1)
	return ss.Call(ctx, method, params, result)
}

// taskAsking counts a 2025 task's calls to the client in flight, and
// moves the task between working and input_required with them.
func (s *Server) taskAsking(t *task, delta int) {
	t.mu.Lock()
	t.asking += delta
	to := t.status
	switch {
	case t.status.terminal():
	case t.asking > 0:
		to = statusInputRequired
	default:
		to = statusWorking
	}
	changed := to != t.status
	var view taskView
	if changed {
		t.status, t.message, t.updated = to, "", time.Now()
		view = t.viewLocked()
	}
	t.mu.Unlock()
	if changed {
		s.notifyTaskStatus(t, view)
	}
}

// askForTask is a 2026-07-28 task's call to the client: the question is
// listed in tasks/get, and the call waits until tasks/update answers it or
// ctx is done.
func (s *Server) askForTask(ctx context.Context, t *task, method string, params, result any) error {
	raw, err := json.Marshal(newInputRequest(method, params).Params) // {} when nil
	if err != nil {
		return fmt.Errorf("mcp: %s: encoding params: %w", method, err)
	}
	q := &question{method: method, params: raw, answer: make(chan json.RawMessage, 1)}
	key, err := t.addQuestion(ctx, q)
	if err != nil {
		return err
	}
	select {
	case answer := <-q.answer:
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(answer, result); err != nil {
			return fmt.Errorf("mcp: %s: malformed answer from the client: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		t.dropQuestion(key, q)
		return context.Cause(ctx)
	}
}

// addQuestion lists q under its key: the one ctx names ([ContextWithInputKey]),
// else one made of the method and how many such questions the task asked
// before ("elicitation-create-0").
func (t *task) addQuestion(ctx context.Context, q *question) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status.terminal() {
		return "", fmt.Errorf("mcp: %s: the task is over (%s)", q.method, t.status)
	}
	key, named := ctx.Value(inputKeyKey{}).(string)
	if !named {
		if t.calls == nil {
			t.calls = map[string]int{}
		}
		key = fmt.Sprintf("%s-%d", strings.ReplaceAll(q.method, "/", "-"), t.calls[q.method])
		t.calls[q.method]++
	}
	if _, dup := t.asked[key]; dup {
		return "", fmt.Errorf("mcp: %s: a question with key %q is already waiting for its answer", q.method, key)
	}
	if t.asked == nil {
		t.asked = map[string]*question{}
	}
	t.asked[key] = q
	if t.status != statusInputRequired {
		t.status, t.message = statusInputRequired, ""
	}
	t.updated = time.Now()
	return key, nil
}

// dropQuestion withdraws an unanswered question.
func (t *task) dropQuestion(key string, q *question) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.asked[key] != q {
		return
	}
	delete(t.asked, key)
	if len(t.asked) == 0 && t.status == statusInputRequired {
		t.status, t.updated = statusWorking, time.Now()
	}
}

// answer delivers the answers tasks/update brings to the questions they
// name; other keys are ignored. Once none is left, the task is working
// again.
func (t *task) answer(responses map[string]json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	answered := false
	for k, v := range responses {
		if q, ok := t.asked[k]; ok {
			delete(t.asked, k)
			q.answer <- v // 1-buffered; removing q made this the only send
			answered = true
		}
	}
	if answered && len(t.asked) == 0 && t.status == statusInputRequired {
		t.status, t.updated = statusWorking, time.Now()
	}
}

// Hooks for messages a 2025 task sends (outgoing.go).

// taskRoute says where a message sent with ctx goes: outside a task ok is
// false; in a task, id is the tasks/result request waiting for it, or zero
// (no request: the session's own stream), since the tools/call that
// created the task was answered long ago.
func taskRoute(ctx context.Context) (id transport.ID, ok bool) {
	t := taskOf(ctx)
	if t == nil {
		return transport.ID{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.waiters); n > 0 {
		return t.waiters[n-1], true
	}
	return transport.ID{}, true
}

// withRelatedTask adds the related-task _meta to the params of a message a
// 2025 task sends; other params are returned unchanged.
func withRelatedTask(ctx context.Context, params json.RawMessage) json.RawMessage {
	t := taskOf(ctx)
	if t == nil || t.v2() {
		return params
	}
	out, err := setMeta(params, vocab.MetaRelatedTask, map[string]string{"taskId": t.id})
	if err != nil {
		return params
	}
	return out
}

// setMeta sets _meta[key] in a JSON object (nil: an empty one).
func setMeta(raw json.RawMessage, key string, value any) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &fields); err != nil {
			return raw, err
		}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := fields["_meta"]; ok && !bytes.Equal(m, []byte("null")) {
		if err := json.Unmarshal(m, &meta); err != nil {
			return raw, err
		}
	}
	v, err := json.Marshal(value)
	if err != nil {
		return raw, err
	}
	meta[key] = v
	if fields["_meta"], err = json.Marshal(meta); err != nil {
		return raw, err
	}
	return json.Marshal(fields)
}
