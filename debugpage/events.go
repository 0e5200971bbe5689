package debugpage

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// recentEvents is how many cancellations, dropped responses and ended
// sessions the debug page remembers, each.
const recentEvents = 50

// eventLog is the observer (serverOption registers its hooks) that
// remembers, for the live page,
// the transport of each live session, the principal that opened it (with
// -auth-issuer, recorded by its Middleware), and the most recent
// cancellations (with their causes), dropped responses and ended sessions,
// in bounded rings. It is safe for concurrent use, and its methods never
// block for long.
type eventLog struct {
	mu            sync.Mutex
	transports    map[*server.Session]string
	principals    map[*server.Session]principalView
	cancellations recent[cancelEvent]
	drops         recent[dropEvent]
	ended         recent[endedSession]

	// stats counts every request by method/tool and outcome (requestEnded).
	stats *requestStats

	// hooks is what each server the log observes lent it (WireServer).
	hooks []*serverhook.Server
}

var _ serverhook.Wired = (*eventLog)(nil)

// serverOption returns the option that registers l's hooks with a server
// and hands l what the server lends (WireServer).
func (l *eventLog) serverOption() server.Option {
	return wiredOption{
		Option: server.WithObserver(server.Observer{
			RequestEnded:     l.requestEnded,
			SessionStarted:   l.sessionStarted,
			SessionEnded:     l.sessionEnded,
			RequestCancelled: l.requestCancelled,
			ResponseDropped:  l.responseDropped,
		}),
		Wired: l,
	}
}

// wiredOption is a server.Option that server.New also hands what the
// server lends (serverhook.Wired): server.WithObserver's, for an observer
// that needs the server's outcome flush and the methods it serves.
type wiredOption struct {
	server.Option
	serverhook.Wired
}

// WireServer keeps what s lends: its flush, and the methods it knows.
func (l *eventLog) WireServer(s *serverhook.Server) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hooks = append(l.hooks, s)
}

// hook returns what srv lent the log, nil when the log does not observe
// srv.
func (l *eventLog) hook(srv *server.Server) *serverhook.Server {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range l.hooks {
		if h.ID == srv {
			return h
		}
	}
	return nil
}

// flush records the outcomes of srv that wait for their batch, when the
// log observes srv.
func (l *eventLog) flush(srv *server.Server) {
	if h := l.hook(srv); h != nil {
		h.Flush()
	}
}

// hasMethod returns how to tell srv's methods from names a client made
// up: what srv lent the log, or, when the log does not observe srv, every
// name.
func (l *eventLog) hasMethod(srv *server.Server) func(string) bool {
	if h := l.hook(srv); h != nil {
		return h.HasMethod
	}
	return func(string) bool { return true }
}

// requestEnded counts req by its method or tool and its outcome, and
// notes the principal that opened its session.
func (l *eventLog) requestEnded(ctx context.Context, req *server.Request, out server.Outcome) {
	l.stats.recordRequest(serverhook.ServerOf(ctx), req, out)
	l.notePrincipal(req)
}

// principalView is who sent a request or opened a session, as the debug page
// shows it: the token's subject and client, never the token (an
// [auth.Principal] holds none).
type principalView struct {
	Subject  string `json:"subject,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	// Actor acts on behalf of Subject: a delegated token's act chain
	// (RFC 8693 §4.1), outermost first, each "on behalf of" the next.
	Actor string `json:"actor,omitempty"`
}

// principalOf returns the principal of req's arrival (where the resource
// server put it), the zero view without one (authorization off).
func principalOf(req *server.Request) principalView {
	p, ok := auth.PrincipalFromContext(req.ArrivalContext())
	if !ok {
		return principalView{}
	}
	pv := principalView{Subject: cutString(p.Subject), ClientID: cutString(p.ClientID)}
	if len(p.Actors) > 0 {
		pv.Actor = cutString(strings.Join(p.Actors, " on behalf of "))
	}
	return pv
}

// cancelEvent is a request whose handler was cancelled.
type cancelEvent struct {
	Time      time.Time `json:"time"`
	SessionID string    `json:"session_id,omitempty"`
	RequestID string    `json:"request_id"`
	Method    string    `json:"method"`
	Name      string    `json:"name,omitempty"`     // tool or prompt
	Reason    string    `json:"reason"`             // the bounded cause: client_cancel, transport_close, stream_close, shutdown, timeout, upstream_closed, other
	Cause     string    `json:"cause"`              // the cause's text
	RanFor    float64   `json:"ran_for_ms"`         // from receipt to cancellation
	Stateless bool      `json:"stateless,omitzero"` // a 2026-07-28 stateless request
	principalView

	received time.Time // the request's receipt: with its session and id, which request
}

// dropEvent is a request that ended without its response being written.
type dropEvent struct {
	Time      time.Time `json:"time"`
	SessionID string    `json:"session_id,omitempty"`
	RequestID string    `json:"request_id"`
	Method    string    `json:"method"`
	Name      string    `json:"name,omitempty"`
	Reason    string    `json:"reason"` // cancelled, writer_closed, peer_gone, shutdown
	principalView

	received time.Time // the request's receipt: with its session and id, which request
}

// endedSession is a session that ended, with why.
type endedSession struct {
	Time       time.Time `json:"time"`
	SessionID  string    `json:"session_id"`
	Transport  string    `json:"transport"`
	Protocol   string    `json:"protocol_version,omitempty"`
	DurationMS float64   `json:"duration_ms"`
	Reason     string    `json:"reason"` // none for a clean end of input
	Cause      string    `json:"cause,omitempty"`
	principalView
}

func newEventLog() *eventLog {
	return &eventLog{
		transports:    make(map[*server.Session]string),
		principals:    make(map[*server.Session]principalView),
		cancellations: newRecent[cancelEvent](recentEvents),
		drops:         newRecent[dropEvent](recentEvents),
		ended:         newRecent[endedSession](recentEvents),
		stats:         newRequestStats(time.Now()),
	}
}

func (l *eventLog) sessionStarted(ctx context.Context, s *server.Session) {
	name := mcpconv.TransportFromContext(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.transports[s] = name
}

func (l *eventLog) sessionEnded(_ context.Context, s *server.Session, cause error) {
	protocol := s.ProtocolVersion()
	if protocol == "" { // never initialized: a 2026-07-28 stateless request's own session, or a failed start
		l.mu.Lock()
		delete(l.transports, s)
		delete(l.principals, s)
		l.mu.Unlock()
		return
	}
	e := endedSession{
		Time:       time.Now(),
		SessionID:  cutString(s.ID()),
		Protocol:   cutString(protocol),
		DurationMS: millis(time.Since(s.Started())),
		Reason:     server.ReasonOfCause(cause).String(),
	}
	if cause != nil {
		e.Cause = cutString(cause.Error())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Transport = l.transports[s]
	e.principalView = l.principals[s]
	delete(l.transports, s)
	delete(l.principals, s)
	l.ended.add(e)
}

func (l *eventLog) requestCancelled(_ context.Context, req *server.Request, cause error) {
	e := cancelEvent{
		Time:      time.Now(),
		SessionID: sessionIDOf(req),
		RequestID: cutString(req.ID.String()),
		Method:    cutString(req.Method),
		Name:      cutString(req.Name),
		Reason:    server.ReasonOfCause(cause).String(),
		Stateless: !req.InSession(),

		principalView: principalOf(req),
		received:      req.Received,
	}
	if cause != nil {
		e.Cause = cutString(cause.Error())
	}
	if !req.Received.IsZero() {
		e.RanFor = millis(e.Time.Sub(req.Received))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancellations.add(e)
}

func (l *eventLog) responseDropped(_ context.Context, req *server.Request, reason protocol.DropReason) {
	e := dropEvent{
		Time:      time.Now(),
		SessionID: sessionIDOf(req),
		RequestID: cutString(req.ID.String()),
		Method:    cutString(req.Method),
		Name:      cutString(req.Name),
		Reason:    reason.String(),

		principalView: principalOf(req),
		received:      req.Received,
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drops.add(e)
}

// notePrincipal records, for the debug page, the principal of a session's
// initialize (behind an OAuth resource server). A session answers only the
// principal that opened it (streamable.WithPrincipal), so that is the
// principal of all its requests; the other requests pass untouched,
// without taking the log's lock. Without a principal it does nothing.
func (l *eventLog) notePrincipal(req *server.Request) {
	if req.Method != "initialize" || req.Session == nil {
		return
	}
	pv := principalOf(req)
	if pv == (principalView{}) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, live := l.transports[req.Session] // started, not ended: sessionEnded forgets it
	if _, seen := l.principals[req.Session]; live && !seen {
		l.principals[req.Session] = pv
	}
}

// liveSessions returns how many sessions are live (started, not ended).
func (l *eventLog) liveSessions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.transports)
}

// transportOf returns the transport s is served on, "" if unknown.
func (l *eventLog) transportOf(s *server.Session) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.transports[s]
}

// principalOfSession returns the principal that opened s, the zero view if
// none is known.
func (l *eventLog) principalOfSession(s *server.Session) principalView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.principals[s]
}

// recentSnapshot returns copies of the rings, newest first.
func (l *eventLog) recentSnapshot() (cancels []cancelEvent, drops []dropEvent, ended []endedSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cancellations.list(), l.drops.list(), l.ended.list()
}

// sessionIDOf is the id of req's session, "" when it belongs to none (a
// 2026-07-28 request, whose Session is only its connection), as its span
// tells it (mcp.session.id): the page pairs events and traces by it.
func sessionIDOf(req *server.Request) string {
	if req.Session == nil || !req.InSession() {
		return ""
	}
	return cutString(req.Session.ID())
}

// recent is a bounded ring of the last n values added. It is not safe for
// concurrent use on its own.
type recent[T any] struct {
	buf  []T
	next int // where the next value goes once buf is full
}

func newRecent[T any](n int) recent[T] { return recent[T]{buf: make([]T, 0, max(n, 1))} }

func (r *recent[T]) add(v T) {
	if len(r.buf) < cap(r.buf) {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
}

// list returns the values, newest first, in a new slice.
func (r *recent[T]) list() []T {
	out := make([]T, 0, len(r.buf))
	for i := range len(r.buf) {
		// Walk back from the newest: the one just before next.
		j := (r.next - 1 - i + 2*len(r.buf)) % len(r.buf)
		out = append(out, r.buf[j])
	}
	return out
}
