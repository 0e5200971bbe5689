package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/vigil-mcp/vigil/internal/seal"
	"github.com/vigil-mcp/vigil/transport"
)

// Option configures a [Server]; a nil Option is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	impl         Implementation
	instructions string
	middleware   []Middleware
	observers    []Observer // WithObserver's, in order
	logger       *slog.Logger
	maxInFlight  int
	shedder      transport.Shedder // session.go: nil sheds nothing
	writeTimeout time.Duration
	callTimeout  time.Duration
	timeout      timeoutConfig // the requests' own (timeout.go)
	limitN       int           // WithConcurrencyLimit's default (limit.go)
	limit        limitConfig
	pageSize     int
	notify       notifyConfig  // log and progress notifications (logging.go)
	stateKey     []byte        // seals requestState; random per Server by default
	stateTTL     time.Duration // how long a requestState stays valid
	cacheTTL     time.Duration // ttlMs of cacheable 2026 results
	cacheScope   string        // cacheScope of cacheable 2026 results
	tasks        taskConfig    // the task store (task_store.go)
	fanout       Fanout        // the other replicas' list changes and resource updates (fanout.go)
	// listChangedDelay coalesces list changes into one notification.
	listChangedDelay time.Duration
	// callMiddleware wraps Session.Call (clientcall.go).
	callMiddleware []CallMiddleware
	// toolAccess, when set, hides tools from a request (WithToolAccess).
	toolAccess func(*Request, *Tool) bool
	// toolPolicy, when set, decides each tools/call whose arguments are
	// valid (WithToolPolicy; tool_policy.go).
	toolPolicy func(ctx context.Context, call *CallToolRequest, t *Tool) error
	// callerKey, when set, names who sent a request (WithCallerKey).
	callerKey func(*Request) string
	// useState, when set, records a requestState used in the replicas'
	// shared store (WithUsedRequestStates); nil: in the Server's memory.
	useState func(ctx context.Context, digest string, ttl time.Duration) (bool, error)
	// outcomeBatch and outcomeDelay batch the recording of outcomes
	// (WithOutcomeBatches); a batch of 0 records them at once.
	outcomeBatch int
	outcomeDelay time.Duration

	// maxResultBytes bounds a request's result (limits.go); <= 0: none.
	maxResultBytes int
}

func defaultConfig() config {
	return config{
		impl:         Implementation{Name: "vigil", Version: "dev"},
		logger:       slog.New(slog.DiscardHandler),
		maxInFlight:  1024,
		writeTimeout: 30 * time.Second,
		callTimeout:  60 * time.Second,
		pageSize:     defaultPageSize,
		notify:       defaultNotifyConfig(),
		stateTTL:     10 * time.Minute,
		cacheScope:   "private",
		tasks:        defaultTaskConfig(),

		listChangedDelay: DefaultListChangedDelay,

		maxResultBytes: DefaultMaxResultBytes,
	}
}

// defaultOutcomeDelay is the longest a request's outcome waits for its
// batch under [WithOutcomeBatches] when no delay is given.
const defaultOutcomeDelay = 20 * time.Millisecond

// WithOutcomeBatches records the requests' outcomes ([Observer.RequestEnded],
// and with package middleware's instrumentation the end of each request's
// span, its metrics and its log line) in batches of size requests, on a
// goroutine of the server's, rather than on each request's way out: a
// batch runs once it holds size requests, once half a delay old at the
// next request, at once for a request half a delay after the last, and
// else by a timer delay after its first request (delay <= 0:
// [defaultOutcomeDelay]; a quarter of a second, or delay if longer, while
// requests come steadily). What is recorded lags the requests by up to
// that, except where it is read: the instrumentation's metrics collector
// and the live page run the waiting batches first, and [Server.Shutdown]
// and [Server.Close] before they return. size <= 1, or no option, records
// each outcome at once, on the goroutine that sealed the request. See
// docs/server.md, "Outcome batches".
func WithOutcomeBatches(size int, delay time.Duration) Option {
	return optionFunc(func(c *config) {
		if delay <= 0 {
			delay = defaultOutcomeDelay
		}
		c.outcomeBatch, c.outcomeDelay = size, delay
	})
}

// WithImplementation sets the name and version the server reports in
// serverInfo. The default is "vigil", "dev".
func WithImplementation(name, version string) Option {
	return optionFunc(func(c *config) { c.impl = Implementation{Name: name, Version: version} })
}

// WithMiddleware appends middleware to the chain; the first one given runs
// outermost. Calling it again appends more.
func WithMiddleware(mw ...Middleware) Option {
	return optionFunc(func(c *config) { c.middleware = append(c.middleware, mw...) })
}

// WithObserver adds observers that receive what the core sees, each
// event's hooks called in the order the observers were given (see
// [Observer]). Calling it again adds more.
func WithObserver(obs ...Observer) Option {
	return optionFunc(func(c *config) { c.observers = append(c.observers, obs...) })
}

// WithLogger sets the logger for the server's own messages. The default
// discards everything. Expected disconnects are logged at debug level.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.logger = l
	})
}

// WithMaxInFlightPerSession limits the requests one session may have in
// flight in the server, over any transport: received and not yet
// answered. More are answered at once with [protocol.CodeServerBusy]
// (-32000). The read loop never waits for a slot, so cancellations keep
// flowing. The default is 1024; n < 1 means no limit. (The Streamable HTTP
// endpoint bounds a session's open POSTs apart, with 429:
// streamable.WithMaxRequestStreamsPerSession.)
func WithMaxInFlightPerSession(n int) Option {
	return optionFunc(func(c *config) { c.maxInFlight = n })
}

// WithShedder has the server refuse at once, while s sheds, each request
// other than initialize, server/discover and ping (see
// [transport.NewShedder]): answered with [protocol.CodeServerBusy] (data
// {"retryAfterSeconds":N}: NewShedder's 1 to 3, 1 for another
// Shedder) and reported to the
// Observer's MessageRejected as [protocol.RejectOverloaded], with no span
// and no handler. The Streamable HTTP endpoint of the server asks s itself,
// before the request reaches a session, and answers one s sheds with 503
// and Retry-After (see [Server.Shedder]); over other transports, such as
// stdio, each session asks. nil (the default) sheds nothing.
func WithShedder(s transport.Shedder) Option {
	return optionFunc(func(c *config) { c.shedder = s })
}

// Shedder returns the Shedder given to [WithShedder], or nil: a transport
// that refuses shed requests itself, as the Streamable HTTP endpoint does
// with 503, asks it before a request reaches a session.
func (s *Server) Shedder() transport.Shedder { return s.cfg.shedder }

// WithWriteTimeout bounds how long writing one message may wait for the
// transport (30 s by default). d <= 0 means no bound.
func WithWriteTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.writeTimeout = d })
}

// WithCallTimeout bounds how long a server-to-client request waits for the
// client's answer (60 s by default); on expiry the client is sent
// notifications/cancelled. d <= 0 means no bound beyond the caller's context.
func WithCallTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.callTimeout = d })
}

// WithPageSize sets how many items one page of tools/list, resources/list,
// resources/templates/list and prompts/list holds (defaultPageSize by
// default). n < 1 keeps the default.
func WithPageSize(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.pageSize = n
		}
	})
}

// DefaultListChangedDelay is how long a server waits, by default, after a
// change to its tools, resources or prompts before it sends list_changed.
const DefaultListChangedDelay = 50 * time.Millisecond

// WithListChangedDelay sets how long the server waits after a change to its
// tools, resources or prompts before it sends list_changed, coalescing every
// change in that window into one notification (DefaultListChangedDelay by
// default; 0 sends one notification per change, at once).
func WithListChangedDelay(d time.Duration) Option {
	return optionFunc(func(c *config) { c.listChangedDelay = max(d, 0) })
}

// WithRequestStateKey sets the key that seals the requestState of
// 2026-07-28 input-required results (AES-256-GCM, under a key derived from
// key): the client can neither read nor alter the answers it carries, and
// a state is bound to the request and to the caller ([WithCallerKey]) it
// was issued to. Replicas behind one load balancer must share the key,
// since a retry may reach any of them; by default each Server makes a
// random key of its own. Keys shorter than 32 bytes are refused by keeping
// the default.
func WithRequestStateKey(key []byte) Option {
	return optionFunc(func(c *config) {
		if len(key) >= seal.MinKeyBytes {
			c.stateKey = append([]byte(nil), key...)
		}
	})
}

// WithUsedRequestStates has the replicas that share the key of
// [WithRequestStateKey] share which requestStates were used, as each is
// accepted once (a replay, by its caller or by whoever saw it, is refused
// as invalid). use records digest, a fixed-length digest of a state, for
// ttl (until the state expires), and reports whether it was the first to;
// an error refuses the retry with protocol.CodeServerBusy. Without it
// each Server remembers the states used in its own memory (65,536 of them
// at most: over that, a retry is refused as busy until some expire).
// Package redisshare's ServerOptions sets it.
func WithUsedRequestStates(use func(ctx context.Context, digest string, ttl time.Duration) (first bool, err error)) Option {
	return optionFunc(func(c *config) { c.useState = use })
}

// WithRequestStateTTL sets how long a requestState stays valid (10
// minutes by default): a retry after that is refused with
// protocol.CodeInvalidParams, and the client starts the request again.
func WithRequestStateTTL(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.stateTTL = d
		}
	})
}

// WithCacheHints sets the cache hints of 2026-07-28 list, read and discover
// results: how long a client may reuse one (ttlMs; 0, the default, means at
// once stale) and whether shared caches may keep it ("public") or only the
// caller's authorization context ("private", the default). Any other scope
// keeps the default.
func WithCacheHints(ttl time.Duration, scope string) Option {
	return optionFunc(func(c *config) {
		c.cacheTTL = max(ttl, 0)
		if scope == "public" || scope == "private" {
			c.cacheScope = scope
		}
	})
}

// WithCallMiddleware appends middleware around the server's requests to
// clients; the first one given runs outermost. Calling it again appends
// more. Nil entries are skipped.
func WithCallMiddleware(mw ...CallMiddleware) Option {
	return optionFunc(func(c *config) { c.callMiddleware = append(c.callMiddleware, mw...) })
}

// WithClientLogLevel sets the level from which [ClientLogger] records reach a
// client that has not sent logging/setLevel (slog.LevelInfo by default). A
// level above [LevelEmergency] sends nothing until the client asks. It does
// not apply to 2026-07-28 requests, which name their level themselves.
func WithClientLogLevel(l slog.Level) Option {
	return optionFunc(func(c *config) {
		c.notify.logLevel = severityOf(l)
		if l > LevelEmergency {
			c.notify.logLevel = sevOff
		}
	})
}

// WithClientLogRate limits the notifications/message sent to one session to
// perSecond on average, in bursts of up to burst (100 per second, bursts of
// 200, by default). Records over the limit are dropped and counted (see
// [Session.LogNotificationsDropped]). perSecond <= 0 means no limit.
func WithClientLogRate(perSecond float64, burst int) Option {
	return optionFunc(func(c *config) { c.notify.logRate, c.notify.logBurst = perSecond, max(burst, 1) })
}

// WithProgressInterval sets the least time between two progress
// notifications of one request (10 ms by default); [ReportProgress] drops the
// updates that come sooner, except the final one (progress equal to total).
// d <= 0 sends every update.
func WithProgressInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.notify.progressInterval = max(d, 0) })
}

// WithMaxTasks bounds the tasks a Server keeps at once, running or
// finished (defaultMaxTasks by default). When the store is full, the
// finished task updated longest ago is deleted to make room; when every
// task is still running, a request that would create one more is answered
// with [protocol.CodeServerBusy]. n < 1 keeps the default.
func WithMaxTasks(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.tasks.max = n
		}
	})
}

// WithTaskTTL sets how long a task and its result are kept after the task
// was created (defaultTaskTTL by default); a task still running then is
// cancelled with [ErrTaskExpired]. A 2025-11-25 client may ask for less
// (the ttl of its task-augmented request), never for more. d <= 0 keeps
// tasks until their session ends (2025) or the server closes: the ttl
// clients see is then null (unlimited).
func WithTaskTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.tasks.ttl = max(d, 0) })
}

// WithTaskIDPrefix puts prefix before the ids of the server's tasks, so
// that the replicas of one service behind a load balancer tell their
// tasks apart: Streamable HTTP's shared mode prefixes them with the
// replica's name and a '.', and sends a task's requests to the replica
// that runs it (see streamable.WithCluster).
func WithTaskIDPrefix(prefix string) Option {
	return optionFunc(func(c *config) { c.tasks.idPrefix = prefix })
}

// WithTaskPollInterval sets the interval between two tasks/get that the
// server suggests to clients (pollInterval, pollIntervalMs; one second by
// default). d below one millisecond keeps the default.
func WithTaskPollInterval(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d >= time.Millisecond {
			c.tasks.poll = d
		}
	})
}

// WithToolAccess makes the tools a request may use depend on the request:
// tools/list shows only the tools for which allow returns true (filtered
// before pagination, so pages stay full and cursors valid), and a
// tools/call of a tool it refuses is answered exactly as a call of an
// unknown tool. allow must be safe for concurrent use and must not modify
// the tool. Package middleware/auth's ToolAccess checks the caller's
// scopes against [Tool.Scopes], failing closed; for Streamable HTTP its HTTP guard
// already answers a missing scope with 403, and this filter covers
// tools/list and transports without HTTP. A nil allow shows every tool.
// A filtered tools/list differs per caller: keep the cache scope of
// [WithCacheHints] "private" (the default).
func WithToolAccess(allow func(req *Request, t *Tool) bool) Option {
	return optionFunc(func(c *config) { c.toolAccess = allow })
}

// WithToolPolicy has check decide every call of every tool, after its
// arguments were validated against the tool's input schema and before its
// handler runs, in every path that runs a tool (a call, a task): a nil
// error runs the handler; an error is the call's answer instead, as a
// handler's would be (an [*Error] travels as a protocol error). t is the
// tool as registered, which check must not modify. check must be safe for
// concurrent use. It applies to the tools added after it, so give it to
// [New]. Package middleware/policy's Set.ToolPolicy evaluates CEL policies.
func WithToolPolicy(check func(ctx context.Context, call *CallToolRequest, t *Tool) error) Option {
	return optionFunc(func(c *config) { c.toolPolicy = check })
}

// WithCallerKey binds tasks to whoever created them. key returns the
// identity of whoever sent a request ("" for none: an anonymous caller);
// equal keys mean the same caller. Each task records the key of the
// tools/call that created it, and every tasks/* method compares it with
// the key of its own request: a task of another key is answered exactly
// as an unknown task, and tasks/list lists only the caller's tasks. This
// matters most for 2026-07-28 tasks, which belong to no session, so that
// without a key anyone holding a task's id may read or cancel it. In
// addition, with [WithToolAccess], tasks/get, tasks/result and
// tasks/update check the request's access to the task's tool again, so
// that a token that may not call the tool cannot read its result either.
// A requestState is bound to the key of the caller it was issued to.
// Package middleware/auth's CallerKey is the principal's key. key must be
// safe for concurrent use and fast; a nil key (the default) gives every
// request the key "".
func WithCallerKey(key func(req *Request) string) Option {
	return optionFunc(func(c *config) { c.callerKey = key })
}

// CallerKey returns the key of req's caller, as [WithCallerKey] gives it
// ("" without one): whom its tasks and request states belong to. A
// gateway keeps the calls of different callers apart with it.
func (s *Server) CallerKey(req *Request) string { return s.callerKey(req) }

// callerKey is the key of req's caller (WithCallerKey), "" without one.
func (s *Server) callerKey(req *Request) string {
	if s.cfg.callerKey == nil {
		return ""
	}
	return s.cfg.callerKey(req)
}
