package streamable

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Option configures an [Endpoint]; a nil Option is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// ResponseMode says how a request is answered.
type ResponseMode uint8

// The response modes.
const (
	// ResponseAuto answers with JSON unless a message for the request comes
	// before its response; then the answer is an SSE stream.
	ResponseAuto ResponseMode = iota
	// ResponseSSE always answers with an SSE stream.
	ResponseSSE
	// ResponseJSON always answers with JSON; messages a handler sends for
	// its request before the response are then delivered on the session's
	// GET stream when one is open (2025 era) and dropped otherwise.
	ResponseJSON
)

type config struct {
	guard         Guard // guard.go: WithGuard; nil: none
	logger        *slog.Logger
	mode          ResponseMode
	maxBody       int64
	maxSessions   int
	maxInFlight   int
	idleTimeout   time.Duration
	allowedHosts  []string
	allowedOrigin func(origin string, r *http.Request) bool
	principal     func(*http.Request) string
	keepAlive     time.Duration
	events        EventStore    // resume.go: nil when streams are not resumable
	retry         time.Duration // resume.go: the SSE retry field
	onReject      func(reason protocol.RejectReason)
	cluster       replication.Cluster // shared.go: nil when sessions are this Endpoint's alone
	viewIdle      time.Duration       // shared.go: how long a replica keeps an idle session's view
	onLost        func()              // shared.go: a request whose replica is gone was answered here
	quotas        Quotas              // quota.go
	writeTimeout  time.Duration       // stream.go: bound of one SSE write
	onCut         func(StreamCut)
	maxResumes    int           // resume.go: concurrent resumptions and GET streams per session
	maxState      int           // shared_state.go: largest shared state stored
	initTimeout   time.Duration // expiry.go: idle timeout of a session not yet initialized

	// endpoint.go: the server's, which sheds requests under overload
	// (server.WithShedder); nil: none.
	shedder transport.Shedder

	// shared.go: called for each relay refused, with its reason
	// (replication.Config.OnRelayRefused).
	onRelayRefuse func(reason string)
}

func defaultConfig() config {
	return config{
		logger:       slog.New(slog.DiscardHandler),
		maxBody:      4 << 20,
		maxSessions:  10000,
		maxInFlight:  256,
		idleTimeout:  30 * time.Minute,
		writeTimeout: DefaultWriteTimeout,
		maxResumes:   DefaultMaxResumptions,
		maxState:     DefaultMaxStateBytes,
		initTimeout:  DefaultInitTimeout,
	}
}

// WithLogger sets the logger for the transport's own messages (discarded by
// default).
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.logger = l
		}
	})
}

// WithResponseMode sets how requests are answered (ResponseAuto by default).
func WithResponseMode(m ResponseMode) Option {
	return optionFunc(func(c *config) { c.mode = m })
}

// WithMaxBodyBytes limits the size of a POST body (4 MiB by default); a
// larger body is refused with 413.
func WithMaxBodyBytes(n int64) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxBody = n
		}
	})
}

// WithMaxSessions limits concurrent 2025-era sessions (10,000 by default); an
// initialize beyond it is refused with 503 and Retry-After.
func WithMaxSessions(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxSessions = n
		}
	})
}

// WithMaxRequestStreamsPerSession limits the requests of one 2025-era
// session whose POSTs are open at once, each waiting on its response
// stream (256 by default); more are refused with 429 and Retry-After.
// n <= 0 keeps the default. (The server bounds the requests a session has
// in flight apart, over any transport, with -32000:
// server.WithMaxInFlightPerSession.)
func WithMaxRequestStreamsPerSession(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxInFlight = n
		}
	})
}

// WithIdleTimeout ends a 2025-era session that has seen no request for d
// (30 minutes by default), as DELETE would. d <= 0 disables expiry,
// except in shared mode ([WithCluster]), where New hands d to the
// cluster: its session records then expire after 30 minutes without a
// request, so that a dead replica's records go.
func WithIdleTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.idleTimeout = d })
}

// WithAllowedHosts sets the Host header values (host or host:port) accepted
// in addition to loopback names, against DNS rebinding. By default only
// localhost, 127.0.0.1 and [::1] (any port) are accepted when the request
// arrives on a loopback address; requests on other addresses are accepted
// from any Host unless this option lists some.
func WithAllowedHosts(hosts ...string) Option {
	return optionFunc(func(c *config) { c.allowedHosts = append(c.allowedHosts, hosts...) })
}

// WithOriginCheck sets the check of a request's Origin header: allow
// reports whether a request with that origin is accepted (a request
// without Origin always is). By default one with Origin is accepted when
// the origin's host is the request's Host or an allowed host (see
// WithAllowedHosts).
func WithOriginCheck(allow func(origin string, r *http.Request) bool) Option {
	return optionFunc(func(c *config) { c.allowedOrigin = allow })
}

// WithPrincipal binds each 2025-era session to the principal an
// authentication middleware established for the request that created it
// (principal returns it, "" for none): a request carrying the session's id
// but another principal is answered as if the session did not exist (404).
// The quotas ([Quotas]) count a principal's user: a key of the form
// auth.Principal.Key makes (issuer, subject, client) counts by its issuer
// and subject, so that one user's clients share one caller's quotas.
func WithPrincipal(principal func(*http.Request) string) Option {
	return optionFunc(func(c *config) { c.principal = principal })
}

// WithKeepAlive sends an SSE comment on idle GET streams every d, so that
// proxies keep them open. Off by default.
func WithKeepAlive(d time.Duration) Option {
	return optionFunc(func(c *config) { c.keepAlive = max(d, 0) })
}

// WithRejectHook calls f for every HTTP request the endpoint refuses itself,
// before any MCP session sees it (bad input, limits, unknown sessions,
// DNS-rebinding refusals), with its reason. The reason's String is the
// label telemetry counts it under, beside the sessions' own rejections
// (see server.Observer's MessageRejected). Each WithRejectHook adds its
// f, and the hooks run in the order given (a nil f is ignored), so that
// telemetry and an authorization layer each count what they count. f must
// be fast and safe for concurrent use.
func WithRejectHook(f func(reason protocol.RejectReason)) Option {
	return optionFunc(func(c *config) {
		switch prev := c.onReject; {
		case f == nil:
		case prev == nil:
			c.onReject = f
		default:
			c.onReject = func(reason protocol.RejectReason) { prev(reason); f(reason) }
		}
	})
}

// WithEventStore makes the 2025-era streams resumable, storing their events
// in store (nil: not resumable, the default). Every SSE event then carries
// an id; a request answered with SSE starts with a priming event (an id and
// empty data) and a retry field (see [WithRetryInterval]); and the
// disconnect policy changes from "cancel" to "keep running, replay": when
// the client of a request's SSE stream goes away after the priming event,
// the handler keeps running, the messages for the request and its response
// are stored, and a GET with Last-Event-ID replays them and carries the
// stream on until the response (see the package documentation).
func WithEventStore(store EventStore) Option {
	return optionFunc(func(c *config) { c.events = store })
}

// WithRetryInterval sets the reconnection delay a resumable stream asks
// clients to wait (the SSE retry field) before resuming a closed stream; 1
// second by default or when d <= 0. It matters only with [WithEventStore].
func WithRetryInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.retry = d })
}

const defaultRetry = time.Second

// DefaultWriteTimeout is the bound of one SSE write by default (see
// [WithWriteTimeout]): long enough for a client on a slow link to take one
// event, short enough that a client that stopped reading soon frees what
// its stream holds.
const DefaultWriteTimeout = 10 * time.Second

// WithWriteTimeout bounds each write of an SSE event (and its flush), and
// the writing of a JSON answer, to d ([DefaultWriteTimeout] by default, or
// when d <= 0): a client that stops reading (its TCP window at zero)
// cannot pin the stream, its goroutine and its lock. A write gets at
// least d and at most one and a half times d (a stream's deadline is
// renewed only once less than d of it remains, not at every event).
// When a write does not complete in time the stream ends and is counted (see [WithStreamCutHook]); the session lives on, and a
// resumable stream's events stay stored for a resumption.
func WithWriteTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.writeTimeout = d
		}
	})
}

// StreamCut says why the Endpoint cut a stream or a session off by itself.
// Its String is the reason label telemetry counts it under.
type StreamCut uint8

// The reasons for a cut.
const (
	// CutWriteTimeout: an SSE write did not complete within the write
	// timeout; the stream ended, the session lives on.
	CutWriteTimeout StreamCut = iota + 1
	// CutStateTooLarge: a shared session's state was larger than the cap
	// ([WithMaxStateBytes]); it was not stored, and the session ended.
	CutStateTooLarge
	// CutInitTimeout: a session did not finish initialize (no
	// notifications/initialized) in time ([WithInitTimeout]); it ended.
	CutInitTimeout
	// CutBacklog: the client of a standalone GET stream did not take its
	// events as fast as they came, and the events waiting for it
	// exceeded the stream's bound; the stream ended, the session lives on.
	CutBacklog
)

// String returns the label: write_timeout, state_too_large, init_timeout,
// backlog.
func (c StreamCut) String() string {
	switch c {
	case CutWriteTimeout:
		return "write_timeout"
	case CutStateTooLarge:
		return "state_too_large"
	case CutInitTimeout:
		return "init_timeout"
	case CutBacklog:
		return "backlog"
	}
	return "other"
}

// WithStreamCutHook calls f each time the Endpoint cuts a stream or a
// session off by itself, with the reason. f must be fast and safe for
// concurrent use.
func WithStreamCutHook(f func(StreamCut)) Option {
	return optionFunc(func(c *config) { c.onCut = f })
}

// DefaultMaxResumptions is how many resumptions and GET streams one
// session may have open at once by default (see [WithMaxResumptions]).
const DefaultMaxResumptions = 4

// WithMaxResumptions bounds the GET streams one 2025-era session has open
// at once on this Endpoint, resumptions (Last-Event-ID) and the standalone
// stream alike, to n ([DefaultMaxResumptions] by default, or when n <= 0).
// A resumption of a stream already being carried takes it over and does
// not count twice; one more is refused with 429 and Retry-After (counted
// as in_flight_limit), rather than ending another stream the client is
// still reading.
func WithMaxResumptions(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxResumes = n
		}
	})
}

// DefaultMaxStateBytes is the largest shared session state stored by
// default (see [WithMaxStateBytes]): room for an initialize's parameters at
// their cap, and the session's subscriptions.
const DefaultMaxStateBytes = 256 << 10

// WithMaxStateBytes caps the state of a shared session ([WithCluster])
// the Endpoint stores in the cluster to n bytes ([DefaultMaxStateBytes] by
// default, or when n <= 0): a larger state is not stored, the session ends
// everywhere (its next request is answered 404, so that the client starts
// a new one), and the cut is counted ([CutStateTooLarge]).
func WithMaxStateBytes(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxState = n
		}
	})
}

// DefaultInitTimeout is how long a session may stay idle before its client
// finished initialize, by default (see [WithInitTimeout]).
const DefaultInitTimeout = time.Minute

// WithInitTimeout ends a 2025-era session whose client has not posted
// notifications/initialized and that has seen no request for d
// ([DefaultInitTimeout] by default, or when d <= 0; never longer than the
// idle timeout, and in force when idle sessions never expire), so that
// sessions opened and abandoned cost little for long. The end is counted
// ([CutInitTimeout]). In shared mode ([WithCluster]) the cluster's record
// expires after it too, the Endpoint having handed it over in [New]; the
// Endpoint renews the record once the client initialized.
func WithInitTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.initTimeout = d
		}
	})
}
