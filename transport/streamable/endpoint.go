package streamable

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/overload"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/internal/wholebody"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Server serves one connection until it ends; the server package's *Server
// is one.
type Server interface {
	Serve(ctx context.Context, conn transport.Conn) error
}

// Header names, in canonical form (MCP-Protocol-Version is read as
// Mcp-Protocol-Version), as net/http keys what it reads: headerValue looks
// them up as they are.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	headerContentType     = "Content-Type"
	headerAccept          = "Accept"
	headerOrigin          = "Origin"
)

// Endpoint is one MCP endpoint: an http.Handler serving POST, GET and DELETE
// for 2025 sessions and 2026-07-28 stateless requests alike. It is safe for
// concurrent use.
type Endpoint struct {
	srv    Server
	attach transport.Attacher // srv, when it is one
	cfg    config
	limit  writeLimit  // stream.go: bounds every SSE write
	expiry *expiry     // ends idle sessions; nil when they never expire
	quotas *quotaState // quota.go

	forwardTo   http.Handler           // forward.go: serves forwarded requests: the guard's wrap of the Endpoint, or the Endpoint
	stopForward func()                 // forward.go: ends HandleForwarded
	stopCancels func()                 // stateless_cancel.go: ends the subscription to replication.RelayCancel; nil: none
	calls       *statelessCalls        // stateless_cancel.go: the stateless requests in flight
	relayBudget *cancelRelayBudget     // cancel_relay_budget.go: the cancels relayed to other replicas
	onHeld      func()                 // called when a cancel is held (cancelWhenGone); for tests: export_test.go
	draining    atomic.Bool            // shared.go: Drain was called; nothing is admitted
	namedHost   atomic.Pointer[string] // security.go: the last Host allowed by its name
	namedOrigin atomic.Pointer[string] // security.go: the last Origin host allowed by its name
	drained     chan struct{}          // shared.go: closed by Drain
	drainOnce   sync.Once

	cast *multicast // multicast.go: notifications for every plain session's GET stream

	// streamTables holds the request-stream tables of sessions with no
	// POST in flight (session.go), so that an idle session holds none.
	streamTables sync.Pool

	// mu guards sessions and closed. Every request of a session looks it
	// up, from every core: lookups share the lock (RLock), and only a
	// session's filing and forgetting take it alone.
	mu       sync.RWMutex
	sessions map[string]*session
	closed   bool
	serving  sync.WaitGroup // 2025-era sessions being served (until Serve returns or done is called)
}

var _ http.Handler = (*Endpoint)(nil)

// New returns an Endpoint that serves MCP for srv. When srv sheds
// requests under overload (server.WithShedder), the Endpoint asks its
// Shedder about every request other than initialize, server/discover and
// ping that the per-caller quotas admitted, before the request reaches a
// session: one it sheds is answered at once with 503, Retry-After and the
// busy JSON-RPC error, and counted as [protocol.RejectOverloaded] through
// the reject hook. The Shedder of transport.NewShedder reads how long each
// request waited from its connection when the http.Server's ConnContext
// is [ConnContext].
func New(srv Server, opts ...Option) *Endpoint {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if src, ok := srv.(transport.ShedderSource); ok {
		cfg.shedder = src.Shedder()
	}
	h := &Endpoint{srv: srv, cfg: cfg, sessions: make(map[string]*session), drained: make(chan struct{}), quotas: newQuotaState(cfg.quotas), cast: newMulticast(), calls: newStatelessCalls(), relayBudget: newCancelRelayBudget()}
	h.attach, _ = srv.(transport.Attacher)
	h.streamTables.New = func() any { return make(map[transport.ID]*stream, 1) }
	h.limit = writeLimit{timeout: cfg.writeTimeout, cut: cfg.onCut, base: time.Now()}
	h.forwardTo = h
	if cfg.guard != nil {
		h.forwardTo = cfg.guard.Wrap(h)
	}
	if cfg.cluster != nil {
		// The cluster expires the sessions, on the Endpoint's timeouts,
		// handed over before any session exists; a replica, its idle views.
		if e, ok := cfg.cluster.(replication.Expiring); ok {
			e.SetSessionTimeouts(cfg.idleTimeout, cfg.initTimeout)
		}
		h.expiry = newExpiry(cfg.viewIdle, 0, h.expireView)
		if f, ok := cfg.cluster.(replication.Forwarder); ok {
			stop, err := f.HandleForwarded(h.serveForwarded)
			if err != nil {
				cfg.logger.Warn("streamable: cannot serve the task requests other replicas forward", "error", err)
			} else {
				h.stopForward = stop
			}
		}
		h.stopCancels = h.subscribeCancels()
	} else {
		h.expiry = newExpiry(cfg.idleTimeout, cfg.initTimeout, h.expire)
	}
	return h
}

// ServeHTTP serves POST, GET and DELETE on the endpoint.
func (h *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if (!h.hostAllowed(r) || !h.originAllowed(r)) && !isForwarded(r) {
		h.reject(w, http.StatusForbidden, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectForbidden, protocol.RejectForbidden.Message())
		return
	}
	if h.draining.Load() && r.Method != http.MethodPost { // a POST is refused once read, with its id
		h.refuseDraining(w, transport.ID{})
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		h.reject(w, http.StatusMethodNotAllowed, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "method not allowed")
	}
}

// Close ends every session at once, as DELETE would, and waits for the
// server to be done with them (their Serve calls return, or Attach's done
// is called). Use it after the server's Shutdown drained them; new
// sessions are refused afterwards.
func (h *Endpoint) Close() error {
	if h.stopForward != nil {
		h.stopForward()
	}
	if h.stopCancels != nil {
		h.stopCancels()
	}
	h.expiry.close()
	if h.cfg.cluster != nil {
		h.handBack(false) // the requests still running: resumed elsewhere (shared.go)
	}
	h.mu.Lock()
	h.closed = true
	sessions := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.mu.Unlock()
	for _, s := range sessions {
		s.terminate(errHandlerClosed)
	}
	h.serving.Wait()
	return nil
}

var errHandlerClosed = errors.New("streamable: handler closed")

// readBody reads r's body, of at most limit bytes: when the request
// declares its length (as clients do), into one buffer of that length,
// which a client that sends less than it declared does not get at once
// (wholebody.ReadDeclared); otherwise through http.MaxBytesReader, growing
// as bytes arrive. A wholebody.Body that a handler in front read already
// is taken as it is.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if b, ok := r.Body.(*wholebody.Body); ok {
		if data, unread := b.Unread(); unread && int64(len(data)) <= limit {
			return data, nil
		}
	}
	if n := r.ContentLength; n >= 0 && n <= limit {
		return wholebody.ReadDeclared(r.Body, n) // the server reads no more than the declared size
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// post serves a POST: one message, in a session or stateless.
func (h *Endpoint) post(w http.ResponseWriter, r *http.Request) {
	// Every body counts against its caller's byte quota and the process's
	// memory budget while its POST lasts, from before it is read.
	caller := h.callerOf(r)
	var body bodyHold
	if !h.admitBody(w, r, caller, &body) {
		return // refused
	}
	defer body.release()
	msg, ok := h.readPost(w, r, &body)
	if !ok {
		return // answered
	}
	if req, ok := msg.(*transport.Request); ok && !req.IsNotification() {
		// Every request counts against its caller's in-flight quota while
		// its POST lasts, in a session or stateless.
		if body.over { // a small body past the caller's byte quota: read, and refused with its id
			h.refuseBytes(w, r, req)
			return
		}
		var admitted bool
		if body.inFlight, admitted = h.quotas.inFlight.Acquire(caller); !admitted {
			h.refuseQuota(w, r, req.ID, protocol.QuotaInFlight, protocol.RejectInFlightLimit, retryInFlight)
			return
		}
		if h.shed(w, r, req, caller) {
			return
		}
	}
	if h.isStateless(r, msg) {
		h.stateless(w, r, msg, caller)
		return
	}
	h.sessionPost(w, r, msg)
}

// readPost reads and checks a POST's message, in a frame apart from
// post's, which stands over the whole handler (docs/limits.md, "The
// request's stack"); false when it answered the POST instead: refused,
// or forwarded to the replica of its task. held is the bytes counted for
// the body, cut to its size once read.
//
//go:noinline
func (h *Endpoint) readPost(w http.ResponseWriter, r *http.Request, held *bodyHold) (transport.Message, bool) {
	if !isJSONContentType(headerValue(r.Header, headerContentType)) {
		h.reject(w, http.StatusUnsupportedMediaType, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "Content-Type must be application/json")
		return nil, false
	}
	if !acceptsPostAnswers(r) {
		h.reject(w, http.StatusNotAcceptable, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "Accept must include application/json and text/event-stream")
		return nil, false
	}
	body, err := readBody(w, r, h.cfg.maxBody)
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			h.reject(w, http.StatusRequestEntityTooLarge, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectFrameTooLarge, "body too large")
			return nil, false
		}
		h.reject(w, http.StatusBadRequest, transport.ID{}, protocol.CodeParseError, protocol.RejectParseError, "cannot read body")
		return nil, false
	}
	held.shrink(len(body))
	msg, err := transport.DecodeOwnedMessage(body) // body is this request's own
	if err != nil {
		de, ok := errors.AsType[*transport.DecodeError](err)
		if !ok {
			de = &transport.DecodeError{Code: protocol.CodeParseError, Err: err}
		}
		h.reject(w, http.StatusBadRequest, de.ID, de.Code, de.Reason(), err.Error())
		return nil, false
	}
	if !h.guarded(w, r, msg) {
		return nil, false // refused and answered by the guard
	}
	if _, isBatch := msg.(transport.Batch); isBatch {
		h.reject(w, http.StatusBadRequest, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "JSON-RPC batches are not supported over HTTP")
		return nil, false
	}
	if h.draining.Load() {
		var id transport.ID
		if req, ok := msg.(*transport.Request); ok {
			id = req.ID
		}
		h.refuseDraining(w, id)
		return nil, false
	}
	if req, ok := msg.(*transport.Request); ok && h.cfg.cluster != nil {
		if replica, elsewhere := h.taskReplica(req); elsewhere {
			h.forward(w, r, req, body, replica) // forward.go
			return nil, false
		}
	}
	return msg, true
}

// refuseDraining refuses a request that reached a replica leaving the
// cluster (Drain) with 503 and Retry-After: the load balancer tries
// another replica, which serves the session as well. id is the request's,
// when it was read.
func (h *Endpoint) refuseDraining(w http.ResponseWriter, id transport.ID) {
	w.Header().Set("Retry-After", "1")
	h.reject(w, http.StatusServiceUnavailable, id, protocol.CodeServerBusy, protocol.RejectOther, "this replica is shutting down; retry")
}

// shed answers req, the request of POST r from caller (the quotas'),
// at once with 503 and reports true when the Endpoint's Shedder sheds it,
// before any session, span or handler sees it (never a request
// overload.Exempt spares). A caller that sends fewer requests than the
// others is spared (overload.Refusal).
func (h *Endpoint) shed(w http.ResponseWriter, r *http.Request, req *transport.Request, caller string) bool {
	sh := h.cfg.shedder
	if sh == nil || overload.Exempt(req.Method) {
		return false
	}
	seconds := overload.Refusal(r.Context(), sh, caller)
	if seconds == 0 {
		return false
	}
	if h.cfg.onReject != nil {
		h.cfg.onReject(protocol.RejectOverloaded)
	}
	writeBusy(w, http.StatusServiceUnavailable, req.ID, protocol.RejectOverloaded.Message(), overload.RetryData(seconds), seconds)
	return true
}

// isStateless reports whether a POST belongs to the 2026-07-28 era: by its
// version header, or (with no session) by the version in its _meta.
func (h *Endpoint) isStateless(r *http.Request, msg transport.Message) bool {
	if headerValue(r.Header, headerProtocolVersion) == protocol.Version20260728 {
		return true
	}
	if headerValue(r.Header, headerSessionID) != "" {
		return false
	}
	req, ok := msg.(*transport.Request)
	if !ok || req.Method == "initialize" {
		return false
	}
	versioned := false
	req.EachMeta(func(key, _ []byte) { versioned = versioned || string(key) == vocab.MetaProtocolVersion })
	return versioned
}

// sessionPost serves a POST of a 2025-era session.
func (h *Endpoint) sessionPost(w http.ResponseWriter, r *http.Request, msg transport.Message) {
	if s, req := h.postSession(w, r, msg); s != nil {
		s.serveRequest(w, r, req)
	}
}

// postSession finds or opens the session of a 2025-era POST and returns it
// with the request to serve in it, in a frame apart from sessionPost's,
// which stands over the whole handler (docs/limits.md, "The request's
// stack"); nil when it answered the POST instead: refused, or a
// notification or response, delivered.
//
//go:noinline
func (h *Endpoint) postSession(w http.ResponseWriter, r *http.Request, msg transport.Message) (*session, *transport.Request) {
	req, isRequest := msg.(*transport.Request)
	var reqID transport.ID // the id error answers carry, when there is one
	if isRequest {
		reqID = req.ID
	}
	if v := headerValue(r.Header, headerProtocolVersion); v != "" && (v == protocol.Version20260728 || !slices.Contains(protocol.Versions(), v)) {
		h.reject(w, http.StatusBadRequest, reqID, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "unsupported MCP-Protocol-Version "+strconv.Quote(v[:min(len(v), 64)])) // not echoed whole
		return nil, nil
	}
	var s *session
	if isRequest && req.Method == "initialize" && headerValue(r.Header, headerSessionID) == "" {
		var status int
		var why protocol.RejectReason
		if s, status, why = h.newSession(r); s == nil {
			if status == http.StatusTooManyRequests {
				h.refuseQuota(w, r, req.ID, protocol.QuotaSessions, why, retrySessions)
				return nil, nil
			}
			h.refuseSessionLimit(w, status, req.ID, why)
			return nil, nil
		}
	} else {
		id := headerValue(r.Header, headerSessionID)
		if id == "" {
			h.reject(w, http.StatusBadRequest, reqID, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "missing Mcp-Session-Id")
			return nil, nil
		}
		var why protocol.RejectReason
		var status int
		if s, why, status = h.lookup(id, r); s == nil {
			h.refuseLookup(w, status, reqID, why)
			return nil, nil
		}
	}
	if isRequest && req.Method == "notifications/initialized" && !s.initialized.Swap(true) && s.view != nil {
		s.renewShared(r.Context()) // the record lives for the idle timeout from now on (shared.go)
	}
	s.touch()
	if isRequest && req.Method == "notifications/cancelled" {
		s.markCancelled(req)
	}
	if !isRequest || req.IsNotification() {
		// A notification, or the client's answer to our request.
		if s.res != nil {
			s.res.observe(msg) // resume.go; before the handler can end (see resumer.handled)
		}
		if !s.deliverInline(context.WithoutCancel(r.Context()), msg) { // else handled on this goroutine
			if err := s.push(r.Context(), msg); err != nil {
				h.refuseUnknownSession(w, protocol.RejectUnknownSession)
				return nil, nil
			}
		}
		if s.view != nil {
			_ = s.relayClient(r.Context(), msg) // to the replica that waits for it (shared.go)
		}
		w.WriteHeader(http.StatusAccepted)
		return nil, nil
	}
	return s, req
}

// refuseSessionLimit answers an initialize refused with status, for why:
// at the Endpoint's WithMaxSessions, Retry-After says when an idle session
// can expire at the soonest (expiry.go); when the Endpoint is closed or
// the cluster's store does not answer, 1 second: another replica may have
// room, or the store may be back.
func (h *Endpoint) refuseSessionLimit(w http.ResponseWriter, status int, id transport.ID, why protocol.RejectReason) {
	retry := 1
	if why == protocol.RejectSessionLimit {
		h.mu.Lock()
		closed := h.closed
		h.mu.Unlock()
		if !closed {
			retry = h.expiry.retryAfter()
		}
	}
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	h.reject(w, status, id, protocol.CodeServerBusy, why, why.Message())
}

// newSession opens a session for an initialize request r and has the
// server serve it; it returns nil, the HTTP status to refuse r with and
// why when it cannot: 429 by the session quota, 503 at the session limit,
// or while the cluster's store does not answer.
func (h *Endpoint) newSession(r *http.Request) (*session, int, protocol.RejectReason) {
	caller, id := h.callerOf(r), newSessionID()
	release, why := h.admitSession(r.Context(), caller, id)
	switch why {
	case protocol.RejectOther:
	case protocol.RejectStoreUnavailable:
		return nil, http.StatusServiceUnavailable, why
	default:
		return nil, http.StatusTooManyRequests, why
	}
	h.mu.Lock()
	if h.closed || len(h.sessions) >= h.cfg.maxSessions {
		h.mu.Unlock()
		release()
		return nil, http.StatusServiceUnavailable, protocol.RejectSessionLimit
	}
	var v *view
	if h.cfg.cluster != nil {
		v = newView(h.cfg.cluster, nil) // shared.go
	}
	s := newSession(h, id, h.principalOf(r), h.attach != nil, v)
	s.caller = caller
	if v == nil {
		s.release = release // a shared session's end is the cluster's
	}
	ctx := withSession(context.WithoutCancel(r.Context()), s) // withSession: resume.go
	h.sessions[s.id] = s
	h.serving.Add(1) // under mu: Close waits for it
	h.mu.Unlock()

	if h.cfg.cluster != nil {
		if err := h.create(r.Context(), s); err != nil { // shared.go
			h.cfg.logger.Warn("streamable: cannot create a shared session", "error", err)
			release()
			h.evict(s)
			close(s.view.ready)
			h.serving.Done()
			return nil, http.StatusServiceUnavailable, protocol.RejectStoreUnavailable
		}
		defer close(s.view.ready)
	}
	h.serve(ctx, s)
	return s, 0, protocol.RejectOther
}

// serve has the server serve s, which is filed in h.sessions and counted
// in h.serving.
func (h *Endpoint) serve(ctx context.Context, s *session) {
	if h.attach == nil {
		go func() {
			defer h.serving.Done()
			_ = h.srv.Serve(ctx, s.serverConn())
			h.forget(s)
		}()
		return
	}
	served := func(error) {
		h.forget(s)
		h.serving.Done()
	}
	if err := h.attach.Attach(ctx, s.serverConn(), served); err != nil {
		served(err)
	}
}

// expire ends a session that saw no request for the idle timeout, as
// DELETE would.
func (h *Endpoint) expire(s *session) {
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	h.mu.Unlock()
	if !s.initialized.Load() && h.cfg.onCut != nil {
		h.cfg.onCut(CutInitTimeout)
	}
	s.terminate(errIdle)
}

func (h *Endpoint) principalOf(r *http.Request) string {
	if h.cfg.principal == nil {
		return ""
	}
	return h.cfg.principal(r)
}

// lookup finds a live session by id for a request of the same principal;
// when there is none it returns the reason to report: RejectUnknownSession,
// or RejectSessionPrincipal for a live session of another principal (both
// are answered alike, 404, so that a client learns nothing from the
// difference), and the HTTP status: 404, or 503 when a shared session
// cannot be loaded.
func (h *Endpoint) lookup(id string, r *http.Request) (*session, protocol.RejectReason, int) {
	h.mu.RLock()
	s := h.sessions[id]
	h.mu.RUnlock()
	if s == nil && h.cfg.cluster != nil {
		var why protocol.RejectReason
		var status int
		if s, why, status = h.loadView(id, r); s == nil { // shared.go
			return nil, why, status
		}
	}
	if s == nil {
		return nil, protocol.RejectUnknownSession, http.StatusNotFound
	}
	if s.principal != h.principalOf(r) {
		return nil, protocol.RejectSessionPrincipal, http.StatusNotFound
	}
	if s.view != nil {
		if !s.whenReady(r) { // shared.go
			return nil, protocol.RejectOther, http.StatusServiceUnavailable
		}
		if !s.touchShared(r.Context()) {
			return nil, protocol.RejectUnknownSession, http.StatusNotFound
		}
	}
	return s, 0, 0
}

func (h *Endpoint) forget(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	s.terminate(errSessionEnded)
}

var errSessionEnded = errors.New("streamable: session ended")

func (h *Endpoint) get(w http.ResponseWriter, r *http.Request) {
	if headerValue(r.Header, headerProtocolVersion) != protocol.Version20260728 && !accepts(r, "text/event-stream") {
		h.reject(w, http.StatusNotAcceptable, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "Accept must include text/event-stream")
		return
	}
	if s := h.sessionOf(w, r, "2026-07-28 has no GET stream: use subscriptions/listen"); s != nil {
		s.serveGetPresent(w, r)
	}
}

func (h *Endpoint) delete(w http.ResponseWriter, r *http.Request) {
	s := h.sessionOf(w, r, "2026-07-28 has no sessions to delete")
	if s == nil {
		return
	}
	if s.view != nil {
		// Every replica's view ends, and the id answers 404 everywhere.
		if err := h.endShared(r.Context(), s); err != nil {
			h.cfg.logger.Warn("streamable: cannot delete a shared session", "session", s.id, "error", err)
			w.Header().Set("Retry-After", "1")
			h.reject(w, http.StatusServiceUnavailable, transport.ID{}, protocol.CodeServerBusy, protocol.RejectOther, "the session cannot be deleted now; retry")
			return
		}
		h.releaseShared(r, s)
	}
	h.mu.Lock()
	delete(h.sessions, s.id) // from now on the id answers 404
	h.mu.Unlock()
	s.terminate(errDeleted) // cancels its handlers; does not wait for them
	w.WriteHeader(http.StatusNoContent)
}

// sessionOf finds the live session a GET or DELETE names, or refuses the
// request and returns nil: 405 (with why2026) for a 2026-07-28 request,
// which has no session; 400 without Mcp-Session-Id; 404 for an unknown,
// ended or other principal's session.
func (h *Endpoint) sessionOf(w http.ResponseWriter, r *http.Request, why2026 string) *session {
	if headerValue(r.Header, headerProtocolVersion) == protocol.Version20260728 {
		w.Header().Set("Allow", "POST")
		h.reject(w, http.StatusMethodNotAllowed, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, why2026)
		return nil
	}
	id := headerValue(r.Header, headerSessionID)
	if id == "" {
		h.reject(w, http.StatusBadRequest, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "missing Mcp-Session-Id")
		return nil
	}
	s, why, status := h.lookup(id, r)
	if s == nil {
		h.refuseLookup(w, status, transport.ID{}, why)
	}
	return s
}

// refuseLookup answers a request whose session lookup failed: 404 for an
// unknown session, 503 (retry in a second) when a shared one could not be
// loaded.
func (h *Endpoint) refuseLookup(w http.ResponseWriter, status int, id transport.ID, why protocol.RejectReason) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
		h.reject(w, status, id, protocol.CodeServerBusy, why, "the session cannot be loaded now; retry")
		return
	}
	h.refuseUnknownSession(w, why)
}

// refuseUnknownSession answers a request for a session the endpoint does
// not serve (never opened, deleted, expired, or another principal's) with
// 404, as the specification asks, and a plain-text body, not a JSON-RPC
// error: clients read a JSON-RPC error in a 404 as the refusal of that one
// call, and then never learn that the session is gone. The AI SDK
// (@ai-sdk/mcp 2.0) hands such an error to the call and never calls its
// onSessionExpired; go-sdk v1.8.0 takes it for a call rejected (as a
// 2026-07-28 -32601 is) rather than ErrSessionMissing. The TypeScript SDK
// v1 and v2 and mcp-go act on the status alone. docs/http.md.
func (h *Endpoint) refuseUnknownSession(w http.ResponseWriter, why protocol.RejectReason) {
	if h.cfg.onReject != nil {
		h.cfg.onReject(why)
	}
	http.Error(w, protocol.RejectUnknownSession.Message(), http.StatusNotFound)
}

var errDeleted = errors.New("streamable: session deleted by the client")

// newSessionID returns 128 random bits as visible ASCII.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// acceptsPostAnswers reports whether a POST's Accept header takes both
// answers a POST may get, application/json and text/event-stream. The
// header as clients send it, "application/json, text/event-stream" (or
// the other way round), is recognized as it is, without parsing it.
func acceptsPostAnswers(r *http.Request) bool {
	if v := r.Header[headerAccept]; len(v) == 1 && (v[0] == acceptBoth || v[0] == acceptBothSwapped) {
		return true
	}
	return accepts(r, "application/json") && accepts(r, "text/event-stream")
}

// The Accept headers of clients that take either answer.
const (
	acceptBoth        = "application/json, text/event-stream"
	acceptBothSwapped = "text/event-stream, application/json"
)

// accepts reports whether the Accept header admits mediaType.
func accepts(r *http.Request, mediaType string) bool {
	for _, accept := range r.Header[headerAccept] {
		for part := range strings.SplitSeq(accept, ",") {
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.TrimSpace(mt)
			if strings.EqualFold(mt, mediaType) || mt == "*/*" {
				return true
			}
		}
	}
	return false
}

// headerValue is h.Get(key) for a key in canonical form, such as the
// header* constants: Get would check the key letter by letter on every
// call (a few hundred instructions each, several times per request).
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// isJSONContentType reports whether a Content-Type is application/json
// (parameters such as charset allowed).
func isJSONContentType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	if strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		return true
	}
	parsed, _, err := mime.ParseMediaType(ct)
	return err == nil && parsed == "application/json"
}

// reject refuses an HTTP request with a JSON-RPC error body and tells the
// reject hook why.
func (h *Endpoint) reject(w http.ResponseWriter, status int, id transport.ID, code protocol.Code, reason protocol.RejectReason, msg string) {
	if h.cfg.onReject != nil {
		h.cfg.onReject(reason)
	}
	writeError(w, status, id, code, msg)
}

// writeBusy answers id with status, Retry-After and the busy error with
// msg and data (a JSON object).
func writeBusy(w http.ResponseWriter, status int, id transport.ID, msg, data string, retryAfter int) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	body, _ := transport.AppendMessage(nil, &transport.Response{ID: id, Error: &transport.Error{
		Code: int64(protocol.CodeServerBusy), Message: msg, Data: []byte(data),
	}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers with a JSON-RPC error body.
func writeError(w http.ResponseWriter, status int, id transport.ID, code protocol.Code, msg string) {
	body, _ := transport.AppendMessage(nil, &transport.Response{ID: id, Error: &transport.Error{Code: int64(code), Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
