package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The task engine: every task of a Server, whichever era created it, lives
// in one store that outlives the request that created it. A task is a
// goroutine running a tool handler with a context of its own, plus the
// state tasks/get reports: a status that moves working → input_required ↔
// working → completed, failed or cancelled and never changes once
// terminal, and the result or error kept for the task's TTL.

// ErrTaskExpired is the cancellation cause of a task whose TTL ran out
// while it was still running: the task was deleted with its results.
var ErrTaskExpired = errors.New("mcp: task expired")

// taskStatus is a task's status, as MCP spells it.
type taskStatus string

const (
	statusWorking       taskStatus = "working"
	statusInputRequired taskStatus = "input_required"
	statusCompleted     taskStatus = "completed"
	statusFailed        taskStatus = "failed"
	statusCancelled     taskStatus = "cancelled"
)

func (st taskStatus) terminal() bool {
	return st == statusCompleted || st == statusFailed || st == statusCancelled
}

// taskConfig configures the task store.
type taskConfig struct {
	max  int           // tasks kept at once, running or finished
	ttl  time.Duration // default and longest retention; 0: unlimited
	poll time.Duration // the poll interval suggested to clients

	idPrefix string // before every task id (WithTaskIDPrefix)

	perCaller int                   // tasks one caller may hold (WithTaskQuota); 0: no quota
	quotaKey  func(*Request) string // the caller of a request, for perCaller
}

func defaultTaskConfig() taskConfig {
	return taskConfig{max: defaultMaxTasks, ttl: defaultTaskTTL, poll: time.Second}
}

// defaultMaxTasks is how many tasks a Server keeps at once unless
// [WithMaxTasks] says otherwise.
const defaultMaxTasks = 1000

// defaultTaskTTL is how long a task is kept after its creation unless
// [WithTaskTTL] says otherwise.
const defaultTaskTTL = time.Hour

// task is one tools/call running, or run, in the background.
type task struct {
	id      string
	owner   *Session // the 2025 session that created it; nil for a 2026-07-28 task
	caller  string   // the key of the request that created it (WithCallerKey)
	quota   string   // the caller its WithTaskQuota counts it against
	counted bool     // counted in taskStore.byQuota; guarded by the store's mu
	tool    *Tool    // the tool it runs, as registered when it was created; nil if unknown
	created time.Time
	ttl     time.Duration // 0: unlimited
	poll    time.Duration
	ctx     context.Context // the handler's; cancelled with a cause
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed once a terminal status was announced (see settle)
	settled sync.Once
	prog    *progressState // a 2025 task's progress token, kept for its lifetime; nil without one

	// Guarded by the store's mu.
	timer   *time.Timer // the TTL's
	unwatch func() bool // stops watching the owner session

	mu      sync.Mutex
	status  taskStatus
	message string
	updated time.Time
	result  json.RawMessage  // completed, or failed with a tool error (2025)
	err     *transport.Error // failed with a protocol error
	asking  int              // 2025: requests to the client in flight
	waiters []transport.ID   // 2025: tasks/result requests waiting, oldest first
	asked   map[string]*question
	calls   map[string]int // questions asked so far, by method, for keys
}

// question is a 2026-07-28 task's request for input, waiting for the
// answer that tasks/update brings.
type question struct {
	method string
	params json.RawMessage
	answer chan json.RawMessage // 1-buffered; sent once, by whoever removes it from asked
}

// v2 reports whether the task belongs to the tasks extension
// (2026-07-28) rather than to a 2025 session.
func (t *task) v2() bool { return t.owner == nil }

// taskStore holds a Server's tasks. The zero value is ready.
type taskStore struct {
	mu     sync.Mutex
	byID   map[string]*task
	live   int           // tasks whose handler has not returned (or not started)
	idle   chan struct{} // closed when live drops to 0; nil unless someone waits
	closed bool          // Close ran: no new tasks
	// byQuota counts the stored tasks of each caller that holds one, when
	// there is a task quota (WithTaskQuota).
	byQuota map[string]int
}

// add stores a new task that counts as live until release. It fails with
// [protocol.CodeServerBusy] when the store is full of running tasks or closed.
// With perCaller > 0, a caller (t.quota) holding that many tasks makes
// room by deleting its own finished task updated longest ago, or is
// refused with QuotaRefusal(QuotaTasks).
func (ts *taskStore) add(t *task, limit, perCaller int) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return Errorf(protocol.CodeServerBusy, "server is shutting down")
	}
	if perCaller > 0 && ts.byQuota[t.quota] >= perCaller && !ts.evictLocked(t.quota, true) {
		return QuotaRefusal(protocol.QuotaTasks, taskRetry)
	}
	if len(ts.byID) >= limit && !ts.evictLocked("", false) {
		return Errorf(protocol.CodeServerBusy, "too many tasks: try again once some have finished")
	}
	if ts.byID == nil {
		ts.byID = make(map[string]*task)
	}
	ts.byID[t.id] = t
	ts.live++
	if perCaller > 0 {
		if ts.byQuota == nil {
			ts.byQuota = make(map[string]int)
		}
		ts.byQuota[t.quota]++
		t.counted = true
	}
	return nil
}

// evictLocked deletes the finished task updated longest ago (of caller
// only, when mine); it reports whether there was one.
func (ts *taskStore) evictLocked(caller string, mine bool) bool {
	var oldest *task
	var at time.Time
	for _, t := range ts.byID {
		if mine && (!t.counted || t.quota != caller) {
			continue
		}
		t.mu.Lock()
		terminal, updated := t.status.terminal(), t.updated
		t.mu.Unlock()
		if terminal && (oldest == nil || updated.Before(at)) {
			oldest, at = t, updated
		}
	}
	if oldest == nil {
		return false
	}
	ts.removeLocked(oldest)
	return true
}

// get returns the task with id, or nil.
func (ts *taskStore) get(id string) *task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.byID[id]
}

// remove deletes t; it reports whether t was stored.
func (ts *taskStore) remove(t *task) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.removeLocked(t)
}

func (ts *taskStore) removeLocked(t *task) bool {
	if ts.byID[t.id] != t {
		return false
	}
	delete(ts.byID, t.id)
	if t.counted {
		if n := ts.byQuota[t.quota] - 1; n > 0 {
			ts.byQuota[t.quota] = n
		} else {
			delete(ts.byQuota, t.quota)
		}
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	if t.unwatch != nil {
		t.unwatch()
	}
	return true
}

// watch arms t's TTL timer and, for a 2025 task, its session watch.
func (ts *taskStore) watch(t *task, expire, sessionEnded func()) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t.ttl > 0 {
		t.timer = time.AfterFunc(t.ttl, expire)
	}
	if t.owner != nil {
		t.unwatch = context.AfterFunc(t.owner.ctx, sessionEnded)
	}
}

// sameOwner reports whether a task of owner a belongs to session b (nil:
// 2026-07-28 tasks). A shared session's replica may serve it through a new
// Session after letting its view go (transport.Shared), so two Sessions
// with one id are one session: ids are unique (random, or the transport's).
func sameOwner(a, b *Session) bool {
	return a == b || a != nil && b != nil && a.ID() == b.ID()
}

// owned returns the tasks of owner (nil: 2026-07-28 tasks) created by
// caller (a WithCallerKey key).
func (ts *taskStore) owned(owner *Session, caller string) []*task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []*task
	for _, t := range ts.byID {
		if sameOwner(t.owner, owner) && t.caller == caller {
			out = append(out, t)
		}
	}
	return out
}

// all returns every stored task.
func (ts *taskStore) all() []*task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]*task, 0, len(ts.byID))
	for _, t := range ts.byID {
		out = append(out, t)
	}
	return out
}

// release marks one live task's handler as returned (or never started).
func (ts *taskStore) release() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.live--
	if ts.live == 0 && ts.idle != nil {
		close(ts.idle)
		ts.idle = nil
	}
}

// idleChan returns a channel closed once no task is live.
func (ts *taskStore) idleChan() <-chan struct{} {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.live == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if ts.idle == nil {
		ts.idle = make(chan struct{})
	}
	return ts.idle
}

// close refuses new tasks and returns the stored ones.
func (ts *taskStore) close() []*task {
	ts.mu.Lock()
	ts.closed = true
	ts.mu.Unlock()
	return ts.all()
}

// newTaskID returns a task id: 128 random bits (crypto/rand), so that ids
// cannot be guessed.
func newTaskID() string { return rand.Text() }

// view is a snapshot of a task, as the wire formats need it.
type taskView struct {
	id       string
	status   taskStatus
	message  string
	created  time.Time
	updated  time.Time
	ttl      time.Duration
	poll     time.Duration
	result   json.RawMessage
	err      *transport.Error
	requests map[string]inputRequestJSON
}

// inputRequestJSON is a pending question as tasks/get lists it.
type inputRequestJSON struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// view takes a snapshot of t.
func (t *task) view() taskView {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.viewLocked()
}

func (t *task) viewLocked() taskView {
	v := taskView{
		id: t.id, status: t.status, message: t.message, created: t.created, updated: t.updated,
		ttl: t.ttl, poll: t.poll, result: t.result, err: t.err,
	}
	if len(t.asked) > 0 {
		v.requests = make(map[string]inputRequestJSON, len(t.asked))
		for k, q := range t.asked {
			v.requests[k] = inputRequestJSON{Method: q.method, Params: q.params}
		}
	}
	return v
}

// setStatus moves a task that is not terminal to status to (with
// message), reporting whether it did. A task that already has status to
// is left alone. After a terminal status, call settle.
func (t *task) setStatus(to taskStatus, message string) (taskView, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status.terminal() || t.status == to {
		return taskView{}, false
	}
	t.status, t.message, t.updated = to, message, time.Now()
	if to.terminal() {
		t.asked = nil // the questions' askers stop with the context
	}
	return t.viewLocked(), true
}

// finish records the outcome of t's handler: its result (status given by
// the era's rules) or its protocol error. A task that is already terminal
// (cancelled) keeps its status, and the outcome is dropped. Then call
// settle.
func (t *task) finish(status taskStatus, result json.RawMessage, err *transport.Error, message string) (taskView, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status.terminal() {
		return taskView{}, false
	}
	t.status, t.message, t.updated = status, message, time.Now()
	t.result, t.err, t.asked = result, err, nil
	return t.viewLocked(), true
}

// settle releases the tasks/result requests waiting for t, once t is
// terminal and the session was told (so that the status notification comes
// before the result).
func (t *task) settle() { t.settled.Do(func() { close(t.done) }) }
