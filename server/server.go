package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/internal/seal"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// ErrServerClosed is returned by [Server.Serve] for a session that ended
// because the server shut down or closed, and by Serve calls made after that.
var ErrServerClosed = errors.New("mcp: server closed")

// Server serves MCP sessions, any number of them, each through its own
// [Server.Serve] call, or set up by [Server.Attach] for a transport that
// delivers messages on goroutines of its own. Its methods are safe for
// concurrent use.
type Server struct {
	cfg config
	// instructions, when set, replace cfg.instructions (instructions.go).
	instructions atomic.Pointer[string]
	stateKeys    *seal.Keys         // seal requestState, under cfg.stateKey
	usedStates   usedStates         // the requestStates accepted already (mrtr_used.go)
	handler      Handler            // the middleware chain around route
	methods      map[string]Handler // read-only after New
	tools        toolRegistry
	toolView     atomic.Pointer[func(*Request, *Tool) bool]          // SetToolView's (tools.go)
	toolWait     atomic.Pointer[func(context.Context, string) error] // SetToolWait's (tool_wait.go)
	itemView     atomic.Pointer[func(*Request, string, string) bool] // SetItemView's (item_view.go)
	search       toolSearch                                          // SetToolSearch's (tool_search.go)
	capsCache    capabilitiesCache                                   // capabilities.go: the initialize result's, encoded
	changes      debouncer
	listeners    listenRegistry    // open subscriptions/listen requests
	bg           sync.WaitGroup    // notifications in flight to sessions
	stopFanout   func()            // ends following the other replicas' broadcasts (fanout.go)
	deadlines    deadlineQueues    // the requests' own deadlines (Request.SetDeadline)
	outcomes     *outcomeBatches   // the requests' outcomes being recorded (WithOutcomeBatches); nil: at once
	hook         serverhook.Server // what the observers of other packages need (observer.go)
	obs          observers         // the hooks of the observers given (observer.go)
	endObserved  bool              // an Observer hooks RequestEnded

	resources resourceRegistry
	// resourceFallback reads what no resource serves (resource_fallback.go).
	resourceFallback atomic.Pointer[ResourceHandler]
	// subscriber follows clients' subscriptions (resource_subscriber.go).
	subscriber atomic.Pointer[ResourceSubscriber]
	// expectsFeatures declares tools, prompts and resources with nothing
	// registered yet (expect_features.go).
	expectsFeatures atomic.Bool
	// rootsChanged is told of clients' roots changes (roots_changed.go).
	rootsChanged atomic.Pointer[func(ctx context.Context)]
	finder       skillFinder // skills found when named (skill_finder.go)
	prompts      promptRegistry
	tasks        taskStore // tasks of both eras (task_store.go)

	// serverInfoMeta is the _meta every 2026-07-28 result carries, encoded
	// once, by json.Marshal and so HTML-escaped as encoding/json writes a
	// result: {"<MetaServerInfo>": the server's Implementation}; nil if it
	// cannot be encoded (decorate then says why, each time).
	serverInfoMeta json.RawMessage
	// cacheTTL and cacheScope are the cache hints of a cacheable 2026-07-28
	// result (ttlMs, cacheScope), encoded once; cacheScope is nil if it
	// cannot be encoded.
	cacheTTL, cacheScope json.RawMessage

	sessions   sessionShards
	live       atomic.Int64  // sessions in sessions
	multicasts multicasts    // notify.go: the groups sessions joined
	solo       atomic.Int64  // sessions in sessions that have no group, but for single-request ones (notify.go)
	refusing   atomic.Bool   // Shutdown or Close began: track refuses new sessions
	mu         sync.Mutex    // guards idle
	idle       chan struct{} // closed when draining and the last session ended
}

// New returns a Server configured by opts. New() with no options is a
// working server with no tools.
func New(opts ...Option) *Server {
	cfg := defaultConfig()
	var wired []serverhook.Wired // the options that want what s lends (observer.go)
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
		if w, ok := o.(serverhook.Wired); ok {
			wired = append(wired, w)
		}
	}
	if cfg.stateKey == nil {
		cfg.stateKey = make([]byte, 32)
		_, _ = rand.Read(cfg.stateKey) // crypto/rand.Read never fails
	}
	keys, err := seal.New(cfg.stateKey, nil)
	if err != nil {
		panic(err) // unreachable: stateKey has at least seal.MinKeyBytes
	}
	s := &Server{cfg: cfg, methods: make(map[string]Handler), stateKeys: keys}
	s.obs = combineObservers(cfg.observers)
	s.endObserved = len(s.obs.requestEnded) > 0
	s.outcomes = newOutcomeBatches(cfg.outcomeBatch, cfg.outcomeDelay, cfg.logger, s.recordEnd)
	s.registerCore()
	s.registerTools()
	s.registerResources()
	s.registerPrompts()
	s.registerCompletion()
	s.registerLogging()
	s.registerTasks()
	s.handler = chain(cfg.middleware...)(concurrencyLimit(cfg.limitN, cfg.limit)(s.route))
	if info, err := json.Marshal(cfg.impl); err == nil {
		s.serverInfoMeta, _ = json.Marshal(map[string]json.RawMessage{vocab.MetaServerInfo: info})
	}
	s.cacheTTL = strconv.AppendInt(nil, cfg.cacheTTL.Milliseconds(), 10)
	s.cacheScope, _ = json.Marshal(cfg.cacheScope)
	s.startFanout() // fanout.go
	s.wireObservers(wired)
	return s
}

// Serve runs one session on conn until the session ends and every one of its
// handlers has returned. It ends when conn's input ends or fails (it returns
// nil for a clean end of input), when ctx is done (it returns ctx's cause),
// or when the server shuts down or closes ([ErrServerClosed]). Every handler
// still running is cancelled with the cause, and conn is closed, before Serve
// returns.
func (s *Server) Serve(ctx context.Context, conn transport.Conn) error {
	ss := newSession(ctx, s, conn)
	if !s.track(ss) {
		ss.cancel(ErrShutdown)
		_ = conn.Close()
		return ErrServerClosed
	}
	defer s.untrack(ss)
	return ss.serve()
}

// Attach runs one session on conn, as [Server.Serve] does, but returns as
// soon as the session is set up, and holds no goroutine while the session
// is idle: conn delivers every message on a goroutine of its own through
// the Dispatcher Attach hands to its SetDispatch (see [transport.Driven]),
// and the session ends when conn reports its end through SetEnd, which
// closing conn does. That happens when the transport ends the connection,
// when ctx is done, or when the server shuts down or closes. Then, on a
// goroutine of Attach's, every handler still running is cancelled with the
// cause, conn is closed, the handlers are waited for and done (if not nil)
// is called with what Serve would have returned. The observer sees the
// session start before Attach returns, and end before done is called.
//
// If the server is shutting down or closed, Attach closes conn and returns
// [ErrServerClosed] without calling done; otherwise it returns nil.
func (s *Server) Attach(ctx context.Context, conn transport.Driven, done func(error)) error {
	ss := newSession(ctx, s, conn)
	if !s.track(ss) {
		ss.cancel(ErrShutdown)
		_ = conn.Close()
		return ErrServerClosed
	}
	ss.start()
	conn.SetEnd(func(readErr error) {
		go func() {
			err := ss.stop(readErr)
			s.untrack(ss)
			if done != nil {
				done(err)
			}
		}()
	})
	return nil
}

func (s *Server) track(ss *Session) bool {
	l := &s.sessions[ss.shard]
	l.mu.Lock()
	defer l.mu.Unlock()
	// Checked under the list's lock: Shutdown and Close set refusing,
	// then take every list's lock, so that a session added before they
	// set it is in their snapshot and counted in live.
	if s.refusing.Load() {
		return false
	}
	l.list.add(ss)
	s.live.Add(1)
	if ss.group == nil && !ss.single {
		s.solo.Add(1)
	}
	return true
}

func (s *Server) untrack(ss *Session) {
	l := &s.sessions[ss.shard]
	l.mu.Lock()
	in := ss.link.in
	l.list.remove(ss)
	l.mu.Unlock()
	if in && ss.group == nil && !ss.single {
		s.solo.Add(-1)
	}
	if in && s.live.Add(-1) == 0 && s.refusing.Load() {
		s.mu.Lock()
		if s.idle != nil && s.live.Load() == 0 {
			close(s.idle)
			s.idle = nil
		}
		s.mu.Unlock()
	}
}

// Sessions returns the sessions being served, in no particular order. A
// session that has begun to end is not among them, so once an [Observer]
// saw SessionEnded the session is never listed again. The session of a
// conn that carries one request (a stateless request's) is listed while
// its request is in flight, though observers never hear of it.
func (s *Server) Sessions() []*Session {
	all := s.sessions.snapshot()
	out := all[:0]
	for _, ss := range all {
		if ss.ctx.Err() == nil {
			out = append(out, ss)
		}
	}
	return out
}

// Shutdown stops the server gracefully: sessions stop accepting new
// requests (they are answered with [protocol.CodeServerBusy]) but keep reading
// responses and cancellations, in-flight handlers run on, and each session
// ends once it has none. If ctx is done first, the remaining handlers are
// cancelled with [ErrShutdown], their sessions are closed, and Shutdown
// returns ctx's error without waiting for handlers that ignore
// cancellation. New Serve calls fail with [ErrServerClosed]. Tasks (see
// [RunAsTask]) drain the same way once the sessions have ended: a 2025
// task ends with its session, a 2026-07-28 task runs on until it is done
// or ctx is.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.refusing.Store(true)
	sessions := s.sessions.snapshot() // after it, live counts every session track let in
	idle := make(chan struct{})
	switch {
	case s.live.Load() == 0:
		close(idle)
	case s.idle == nil:
		s.idle = idle // the last untrack closes it
	default:
		idle = s.idle
	}
	s.mu.Unlock()
	s.listeners.stopAll() // listen streams never finish on their own
	for _, ss := range sessions {
		ss.drain()
	}
	defer s.outcomes.run() // what the last requests left to record
	select {
	case <-idle:
		return s.drainTasks(ctx) // tasks.go
	case <-ctx.Done():
		sessions = s.sessions.snapshot()
		for _, ss := range sessions {
			ss.cancel(fmt.Errorf("%w: %w", ErrShutdown, context.Cause(ctx)))
		}
		_ = s.drainTasks(ctx) // cancels them: ctx is done
		return ctx.Err()
	}
}

// flushOutcomes records the outcomes of every request sealed so far that
// still waits for its batch ([WithOutcomeBatches]), and returns once they
// are recorded. Without batches it does nothing.
func (s *Server) flushOutcomes() { s.outcomes.run() }

// Close ends every session at once: handlers are cancelled with
// [ErrShutdown] and connections closed. It does not wait for handlers,
// except those of tasks: every task is cancelled with ErrShutdown and
// deleted, and Close returns once their handlers have returned.
func (s *Server) Close() error {
	s.refusing.Store(true)
	sessions := s.sessions.snapshot()
	for _, ss := range sessions {
		ss.cancel(ErrShutdown)
	}
	s.closeTasks() // tasks.go
	s.deadlines.stop()
	s.outcomes.stop()
	if s.stopFanout != nil {
		s.stopFanout()
	}
	return nil
}

// invoke runs the chain for req, turning a panic into protocol.CodeInternal.
func (s *Server) invoke(ctx context.Context, req *Request) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			s.cfg.logger.ErrorContext(ctx, "handler panicked", "method", req.Method, "id", req.ID.String(), "panic", v, "stack", string(stack))
			s.obs.HandlerPanicked(ctx, req, v, stack)
			res, err = nil, &Error{Code: protocol.CodeInternal, Message: "internal error", err: fmt.Errorf("panic: %v", v)}
		}
	}()
	return s.handler(ctx, req)
}
