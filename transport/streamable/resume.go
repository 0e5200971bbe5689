package streamable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// headerLastEventID names the last event a resuming client received.
const headerLastEventID = "Last-Event-ID"

// resumer is the resumability state of a 2025-era session whose Endpoint has
// an event store. Its streams are logical: they outlive the HTTP responses
// that carry them, store every event, and resume on a GET with
// Last-Event-ID.
//
// Lock order: resumer.mu, then logical.mu, then stream.mu. resumer.mu is
// never taken while a logical.mu is held.
type resumer struct {
	s     *session
	store EventStore
	ended atomic.Bool // the session ended: its events are forgotten

	mu         sync.Mutex
	byReq      map[transport.ID]*logical // request streams not done yet; nil when none
	byKey      map[string]*logical       // the same, and the current standalone stream; nil when none
	standalone *logical                  // the current standalone stream; nil before the first GET
	getServing int                       // HTTP handlers carrying the standalone stream
	keys       uint64                    // last stream key issued
	carriers   map[string]*carrier       // stream key → the GET carrying it here; nil when none
}

// carrier is a GET carrying a stream here (a resumption, or the
// standalone stream): stop is closed when a newer GET of the same stream
// takes it over.
type carrier struct{ stop chan struct{} }

// admit registers a GET carrying stream key: one of the same stream is
// taken over (its stop closed) and not counted twice; beyond the cap of
// concurrent GETs per session, admit refuses (nil).
func (rs *resumer) admit(key string) *carrier {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if old := rs.carriers[key]; old != nil {
		close(old.stop)
	} else if rs.full() {
		return nil
	}
	if rs.carriers == nil {
		rs.carriers = make(map[string]*carrier, 1)
	}
	c := &carrier{stop: make(chan struct{})}
	rs.carriers[key] = c
	return c
}

// full reports whether the session has its most GETs open; rs.mu is held.
func (rs *resumer) full() bool {
	limit := rs.s.h.cfg.maxResumes
	return limit > 0 && len(rs.carriers) >= limit
}

// release forgets the GET c carrying stream key.
func (rs *resumer) release(key string, c *carrier) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.carriers[key] == c {
		delete(rs.carriers, key)
		if len(rs.carriers) == 0 {
			rs.carriers = nil
		}
	}
}

// refuseResume answers a GET over the cap of concurrent GETs per session.
func (rs *resumer) refuseResume(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(rs.retry().Round(time.Second)/time.Second))))
	rs.s.h.reject(w, http.StatusTooManyRequests, transport.ID{}, protocol.CodeServerBusy, protocol.RejectInFlightLimit,
		"too many streams of this session open at once (GET and resumptions); retry once one ended")
}

// logical is one resumable stream: a request's, or the standalone stream.
type logical struct {
	key string
	req transport.ID // the zero ID for the standalone stream

	mu        sync.Mutex // serializes the stream's events: store, then write
	conn      *stream    // the HTTP response carrying the stream; nil while detached
	primed    bool       // the client received an event id of the stream
	cancelled bool       // the client cancelled the request
	done      bool       // nothing more comes: answered, or given up
	lastID    string     // id of the newest event stored
}

func newResumer(s *session, store EventStore) *resumer {
	return &resumer{s: s, store: store}
}

// fileLocked adds ls to the live streams; rs.mu is held.
func (rs *resumer) fileLocked(ls *logical) {
	if ls.req.IsValid() {
		if rs.byReq == nil {
			rs.byReq = make(map[transport.ID]*logical, 1)
		}
		rs.byReq[ls.req] = ls
	}
	if rs.byKey == nil {
		rs.byKey = make(map[string]*logical, 1)
	}
	rs.byKey[ls.key] = ls
}

// newKeyLocked issues a stream key, of a request's stream or of a
// standalone one (see keyRequest); rs.mu is held. A shared session's keys
// name the replica, so that they are unique across replicas.
func (rs *resumer) newKeyLocked(kind byte, req transport.ID) string {
	rs.keys++
	n := strconv.FormatUint(rs.keys, 10)
	if v := rs.s.view; v != nil {
		return sharedKey(kind, v.cluster.Replica(), n, req) // shared.go
	}
	return n
}

// carried reports whether an HTTP response carries ls now.
func (ls *logical) carried() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.conn != nil && !ls.done
}

func (rs *resumer) retry() time.Duration {
	if d := rs.s.h.cfg.retry; d > 0 {
		return d
	}
	return defaultRetry
}

// streamOf returns the stream carrying request id's answer, nil when
// none does (it is detached, awaiting a resumption) or the client
// cancelled the request.
func (rs *resumer) streamOf(id transport.ID) *stream {
	rs.mu.Lock()
	ls := rs.byReq[id]
	rs.mu.Unlock()
	if ls == nil {
		return nil
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.cancelled {
		return nil
	}
	return ls.conn
}

// serveRequest runs the POST of one request, as session.serveRequest does,
// except that a client leaving after the priming event does not cancel the
// request: its stream stays open for a resumption.
func (rs *resumer) serveRequest(w http.ResponseWriter, r *http.Request, req *transport.Request) {
	s := rs.s
	st := newStream(w, s.h.cfg.mode, nil, s.idHeader, &s.h.limit)
	ls := &logical{req: req.ID, conn: st}
	rs.mu.Lock()
	switch {
	case rs.byReq[req.ID] != nil:
		rs.mu.Unlock()
		rs.s.h.reject(w, http.StatusConflict, req.ID, protocol.CodeInvalidRequest, protocol.RejectDuplicateID, protocol.RejectDuplicateID.Message())
		return
	case len(rs.byReq) >= s.h.cfg.maxInFlight:
		rs.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		rs.s.h.reject(w, http.StatusTooManyRequests, req.ID, protocol.CodeServerBusy, protocol.RejectInFlightLimit, protocol.RejectInFlightLimit.Message())
		return
	}
	ls.key = rs.newKeyLocked(keyRequest, req.ID)
	rs.fileLocked(ls)
	rs.mu.Unlock()

	terminated := &transport.Response{ID: req.ID, Error: &transport.Error{Code: int64(protocol.CodeServerBusy), Message: "session terminated"}}
	if s.h.cfg.mode != ResponseSSE && s.attached() {
		rs.serveInline(r, req, ls, st, terminated) // resume_inline.go
		return
	}
	if err := s.handOff(r.Context(), req); err != nil {
		rs.forget(ls)
		s.answerEnded(st, req.ID, terminated)
		return
	}
	if s.h.cfg.mode == ResponseSSE {
		ls.mu.Lock()
		if !ls.primed && ls.conn == st {
			rs.primeLocked(r.Context(), ls)
		}
		ls.mu.Unlock()
	}
	rs.await(r, req, ls, st, terminated)
}

// await waits until the POST of req, whose stream ls is carried by st, is
// over (answered, taken over by a resumption, its client gone, or the
// session ended), then ends st.
func (rs *resumer) await(r *http.Request, req *transport.Request, ls *logical, st *stream, terminated *transport.Response) {
	select {
	case <-st.written():
		// Answered, closed by the server, taken over by a resumption, or
		// a write failed.
	case <-r.Context().Done():
	case <-rs.s.done:
		rs.s.answerEnded(st, req.ID, terminated)
		return
	}
	rs.leave(req, ls, st)
}

// leave takes st off ls and ends it; when the client cannot resume ls
// (it got no event id), the handler of req is cancelled, since its
// answer can no longer be delivered.
func (rs *resumer) leave(req *transport.Request, ls *logical, st *stream) {
	abandon := rs.detach(ls, st)
	st.shutDown(nil)
	if abandon {
		cause := fmt.Errorf("streamable: the client closed the stream of request %s: %w", req.ID.String(), transport.ErrStreamGone)
		_ = rs.s.handOff(context.Background(), &transport.Abandoned{ID: req.ID, Err: cause})
	}
}

// detach takes st off ls when st is over, and gives ls up if its client
// cannot resume it (it received no event id, or cancelled the request). It
// reports whether it gave ls up: its request is then abandoned.
func (rs *resumer) detach(ls *logical, st *stream) bool {
	ls.mu.Lock()
	if ls.conn == st {
		ls.conn = nil
	}
	giveUp := !ls.done && ls.conn == nil && (!ls.primed || ls.cancelled)
	if giveUp {
		ls.done = true
	}
	ls.mu.Unlock()
	if giveUp {
		rs.forget(ls)
	}
	return giveUp
}

// forget drops ls from the live streams.
func (rs *resumer) forget(ls *logical) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if ls.req.IsValid() && rs.byReq[ls.req] == ls {
		delete(rs.byReq, ls.req)
	}
	if rs.byKey[ls.key] == ls {
		delete(rs.byKey, ls.key)
	}
	if len(rs.byReq) == 0 {
		rs.byReq = nil // an idle session keeps no table
	}
	if len(rs.byKey) == 0 {
		rs.byKey = nil
	}
}

// write routes a message as session.Write does (see route), to a logical
// stream.
func (rs *resumer) write(ctx context.Context, m transport.Message) error {
	rs.mu.Lock()
	ls := route(ctx, m, rs.s.h.cfg.mode, rs.byReq, rs.standalone)
	standalone := rs.s.view != nil && (ls == nil || ls == rs.standalone) &&
		forStandalone(ctx, m, rs.s.h.cfg.mode, rs.byReq, standaloneLogical)
	rs.mu.Unlock()
	if standalone && (ls == nil || !ls.carried()) {
		if transport.BroadcastFromContext(ctx) {
			return nil // every replica's server sends it: the one carrying the stream too
		}
		return rs.s.relayStandalone(ctx, m) // another replica may carry it (shared.go)
	}
	if ls == nil {
		return fmt.Errorf("streamable: write: no open stream for the message: %w", transport.ErrStreamGone)
	}
	return rs.send(ctx, ls, m)
}

// send stores a message as the next event of ls and writes it to the HTTP
// response carrying ls, if any. A response ends ls.
func (rs *resumer) send(ctx context.Context, ls *logical, m transport.Message) error {
	data, err := transport.AppendMessage(nil, m)
	if err != nil {
		return err
	}
	_, isResp := m.(*transport.Response)
	ls.mu.Lock()
	err = rs.sendLocked(ctx, ls, m, data, isResp)
	ls.mu.Unlock()
	if isResp {
		rs.forget(ls)
	}
	return err
}

func (rs *resumer) sendLocked(ctx context.Context, ls *logical, m transport.Message, data []byte, isResp bool) error {
	if ls.done {
		return fmt.Errorf("streamable: write: the stream of the message is over: %w", transport.ErrStreamGone)
	}
	conn := ls.conn
	if isResp {
		ls.done = true
	}
	if conn != nil && isResp && rs.s.h.cfg.mode != ResponseSSE && conn.isUndecided() {
		ls.conn = nil
		return conn.deliver(m) // a plain JSON answer: nothing to resume
	}
	if conn != nil && !ls.primed {
		rs.primeLocked(ctx, ls)
		conn = ls.conn // nil when the priming event could not be written
	}
	if isResp {
		ls.conn = nil
	}
	if conn == nil && !ls.primed {
		return fmt.Errorf("streamable: write: the client of the stream left: %w", transport.ErrStreamGone)
	}
	id, err := rs.append(ctx, ls, data)
	if err != nil {
		if conn == nil {
			return err
		}
		rs.s.h.cfg.logger.Warn("streamable: cannot store an event; sending it without an id", "session", rs.s.id, "stream", ls.key, "error", err)
	}
	if conn == nil {
		if rs.s.view != nil && id != "" {
			// A resumption on another replica may be carrying it.
			_ = rs.s.publish(ctx, replication.RelayEvent, []byte(ls.key))
		}
		return nil // stored: a resumption replays it
	}
	if werr := conn.sendEvent(id, data, isResp); werr != nil {
		if ls.conn == conn {
			ls.conn = nil
		}
		if id == "" {
			return werr
		}
	}
	return nil
}

// primeLocked stores and writes a priming event (an id, the retry field
// and empty data) on the response carrying ls; ls.mu is held and ls.conn is
// set. On a store failure the stream goes on without ids; on a write
// failure ls is detached.
func (rs *resumer) primeLocked(ctx context.Context, ls *logical) {
	id, err := rs.append(ctx, ls, nil)
	if err != nil {
		if !errors.Is(err, transport.ErrClosed) {
			rs.s.h.cfg.logger.Warn("streamable: cannot store a priming event; the stream is not resumable", "session", rs.s.id, "stream", ls.key, "error", err)
		}
		return
	}
	if ls.conn.prime(id, rs.retry()) != nil {
		ls.conn = nil
		return
	}
	ls.primed = true
}

// append stores one event of ls; ls.mu is held.
func (rs *resumer) append(ctx context.Context, ls *logical, data []byte) (string, error) {
	closed := fmt.Errorf("streamable: write: %w", transport.ErrClosed)
	if rs.ended.Load() {
		return "", closed
	}
	id, err := rs.store.Append(ctx, rs.s.id, ls.key, data)
	if rs.ended.Load() {
		// The session ended while the event was stored: forget it again.
		_ = rs.store.Forget(context.WithoutCancel(ctx), rs.s.id)
		return "", closed
	}
	if err == nil && !visibleASCII(id) {
		err = fmt.Errorf("the store returned the event id %q, which is not visible ASCII", id)
	}
	if err != nil {
		return "", fmt.Errorf("streamable: storing an event: %w: %w", transport.ErrStreamGone, err)
	}
	ls.lastID = id
	return id, nil
}

// serveGet runs a GET: a resumption when it names the last event received,
// else a new standalone stream.
func (rs *resumer) serveGet(w http.ResponseWriter, r *http.Request) {
	if last := r.Header.Get(headerLastEventID); last != "" {
		rs.resume(w, r, last)
		return
	}
	rs.mu.Lock()
	if rs.getServing > 0 {
		rs.mu.Unlock()
		rs.s.h.reject(w, http.StatusConflict, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectDuplicateID, "a GET stream is already open for this session")
		return
	}
	if rs.full() {
		rs.mu.Unlock()
		rs.refuseResume(w)
		return
	}
	rs.getServing++
	ls := &logical{key: rs.newKeyLocked(keyStandalone, transport.ID{})}
	if old := rs.standalone; old != nil && rs.byKey[old.key] == old {
		delete(rs.byKey, old.key) // a new standalone stream replaces it
	}
	rs.standalone = ls
	rs.fileLocked(ls)
	rs.mu.Unlock()
	defer rs.leaveStandalone()
	c := rs.admit(ls.key) // a new key: admitted unless GETs came meanwhile
	if c == nil {
		rs.refuseResume(w)
		return
	}
	defer rs.release(ls.key, c)

	st := newStream(w, ResponseSSE, nil, rs.s.idHeader, &rs.s.h.limit)
	ls.mu.Lock()
	ls.conn = st
	rs.primeLocked(r.Context(), ls)
	if ls.conn != nil && !ls.primed {
		_ = st.open()
	}
	ls.mu.Unlock()
	rs.carry(r, ls, st, c)
}

// adoptStandalone makes the standalone stream key, which another replica
// carried, this replica's standalone stream, at the event lastID; nil when
// a GET stream is open here already.
func (rs *resumer) adoptStandalone(key, lastID string) *logical {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.getServing > 0 {
		return nil
	}
	rs.getServing++
	ls := &logical{key: key, primed: true, lastID: lastID}
	if old := rs.standalone; old != nil && rs.byKey[old.key] == old {
		delete(rs.byKey, old.key)
	}
	rs.standalone = ls
	rs.fileLocked(ls)
	return ls
}

func (rs *resumer) leaveStandalone() {
	rs.mu.Lock()
	rs.getServing--
	rs.mu.Unlock()
}

// resume serves a GET with Last-Event-ID: replay the events of that
// event's stream after it, then carry the stream on when it is still live
// (a request's until its response; the standalone stream until the client
// or the session leaves). A resumption takes the stream over from the HTTP
// response carrying it, if any, which ends. An id unknown in the session is
// answered 400.
func (rs *resumer) resume(w http.ResponseWriter, r *http.Request, lastID string) {
	s := rs.s
	ctx := r.Context()
	key, events, err := rs.store.Replay(ctx, s.id, lastID)
	if err != nil {
		if errors.Is(err, ErrUnknownEvent) {
			rs.s.h.reject(w, http.StatusBadRequest, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "unknown Last-Event-ID: no stream of this session to resume")
			return
		}
		s.h.cfg.logger.Error("streamable: cannot replay a stream", "session", s.id, "error", err)
		rs.s.h.reject(w, http.StatusInternalServerError, transport.ID{}, protocol.CodeInternal, protocol.RejectOther, "cannot replay the stream")
		return
	}
	s.touch()
	c := rs.admit(key)
	if c == nil {
		rs.refuseResume(w)
		return
	}
	defer rs.release(key, c)
	rs.mu.Lock()
	ls := rs.byKey[key]
	standalone := ls != nil && !ls.req.IsValid()
	if standalone {
		rs.getServing++
	}
	rs.mu.Unlock()
	if standalone {
		defer rs.leaveStandalone()
	}
	if ls == nil && s.view != nil && !strings.HasPrefix(key, string(keyRequest)+s.view.cluster.Replica()+".") &&
		!strings.HasPrefix(key, string(keyStandalone)+s.view.cluster.Replica()+".") {
		// Another replica's stream (shared.go).
		if isStandaloneKey(key) {
			ls = rs.adoptStandalone(key, lastOf(events, lastID))
			if ls == nil {
				rs.s.h.reject(w, http.StatusConflict, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectDuplicateID, "a GET stream is already open for this session")
				return
			}
			defer rs.leaveStandalone()
		} else {
			rs.tail(w, r, key, lastID, events, c)
			return
		}
	}
	st := newStream(w, ResponseSSE, nil, s.idHeader, &s.h.limit)
	if ls == nil {
		// The stream is over (answered, given up or replaced): replay
		// what is left of it and end.
		_ = st.replay(events)
		st.shutDown(nil)
		return
	}
	ls.mu.Lock()
	if want := lastOf(events, lastID); ls.lastID != want {
		// Events came between the replay and the lock: read them again.
		if _, events, err = rs.store.Replay(ctx, s.id, lastID); err != nil {
			ls.mu.Unlock()
			s.h.cfg.logger.Error("streamable: cannot replay a stream", "session", s.id, "error", err)
			rs.s.h.reject(w, http.StatusInternalServerError, transport.ID{}, protocol.CodeInternal, protocol.RejectOther, "cannot replay the stream")
			return
		}
	}
	old := ls.conn
	live := st.replay(events) == nil && !ls.done && !ls.cancelled
	if live {
		ls.conn = st
	}
	ls.mu.Unlock()
	if !live {
		st.shutDown(nil)
		return
	}
	if old != nil {
		old.end() // taken over
	}
	rs.carry(r, ls, st, c)
}

// carry keeps the HTTP response st of ls open until it is over (the
// response was written, or the stream taken over), the client leaves or
// the session ends. c is the GET's admission (see admit).
func (rs *resumer) carry(r *http.Request, ls *logical, st *stream, c *carrier) {
	var tick <-chan time.Time
	if d := rs.s.h.cfg.keepAlive; d > 0 && !ls.req.IsValid() {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	defer st.shutDown(nil)
	for {
		select {
		case <-st.written():
			return
		case <-c.stop: // taken over: resume ended st already
			return
		case <-r.Context().Done():
			rs.detach(ls, st)
			return
		case <-rs.s.done:
			return
		case <-tick:
			if st.comment("keep-alive") != nil {
				rs.detach(ls, st)
				return
			}
		}
	}
}

// observe looks at a notification a client posted: a cancelled request's
// stream is given up once no HTTP response carries it.
func (rs *resumer) observe(m transport.Message) {
	req, ok := m.(*transport.Request)
	if !ok || req.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID transport.ID `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil || !p.RequestID.IsValid() {
		return
	}
	rs.mu.Lock()
	ls := rs.byReq[p.RequestID]
	rs.mu.Unlock()
	if ls == nil {
		return
	}
	ls.mu.Lock()
	ls.cancelled = true
	giveUp := ls.conn == nil && !ls.done
	if giveUp {
		ls.done = true
	}
	ls.mu.Unlock()
	if giveUp {
		rs.forget(ls)
	}
}

// handled is called once the handler of request id returned: if the
// client cancelled the request, no answer comes, and the HTTP response
// carrying its stream ends, as a plain session's does.
func (rs *resumer) handled(id transport.ID) {
	rs.mu.Lock()
	ls := rs.byReq[id]
	rs.mu.Unlock()
	if ls == nil {
		return
	}
	ls.mu.Lock()
	over := ls.cancelled && !ls.done
	var conn *stream
	if over {
		ls.done = true
		conn, ls.conn = ls.conn, nil
	}
	ls.mu.Unlock()
	if !over {
		return
	}
	if conn != nil {
		conn.markCancelled()
		conn.end()
	}
	rs.forget(ls)
}

// closeConn ends the HTTP response carrying the stream of request id,
// after a priming event if it had none, without ending the stream.
func (rs *resumer) closeConn(ctx context.Context, id transport.ID) error {
	rs.mu.Lock()
	ls := rs.byReq[id]
	rs.mu.Unlock()
	if ls == nil {
		return fmt.Errorf("streamable: no open stream for request %s: %w", id.String(), transport.ErrStreamGone)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	conn := ls.conn
	if conn == nil {
		return nil // already closed
	}
	if !ls.primed {
		rs.primeLocked(ctx, ls)
		if !ls.primed {
			return fmt.Errorf("streamable: the stream of request %s cannot be made resumable: %w", id.String(), transport.ErrStreamGone)
		}
	}
	ls.conn = nil
	conn.end()
	return nil
}

// end forgets the session's events; the session ended.
func (rs *resumer) end() {
	rs.ended.Store(true)
	_ = rs.store.Forget(context.Background(), rs.s.id)
}

func lastOf(events []Event, lastID string) string {
	if len(events) == 0 {
		return lastID
	}
	return events[len(events)-1].ID
}

// visibleASCII reports whether s is non-empty visible ASCII (0x21-0x7E).
func visibleASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7E {
			return false
		}
	}
	return s != ""
}

type sessionKey struct{}

// withSession marks the context a session is served with, for
// [CloseSSEStream].
func withSession(ctx context.Context, s *session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// ErrNotResumable is returned by CloseSSEStream for a request that is not
// served over a resumable Streamable HTTP session (another transport, or a
// Endpoint without an event store).
var ErrNotResumable = errors.New("streamable: the request's stream is not resumable")

// CloseSSEStream ends the HTTP response that carries the SSE stream of
// request id without ending the stream ("polling"): the handler keeps
// running, and the client resumes the stream with a GET and Last-Event-ID
// after the retry interval, receiving what was sent meanwhile and the
// response. If the stream had no event yet, a priming event is sent first.
// ctx is any context derived from the one the Endpoint served the session
// with, such as a request handler's; the stream must be a 2025-era
// request's, on an Endpoint with an event store ([WithEventStore]). Closing a
// stream that is already closed does nothing. It is safe for concurrent
// use.
func CloseSSEStream(ctx context.Context, id transport.ID) error {
	s, _ := ctx.Value(sessionKey{}).(*session)
	if s == nil {
		return fmt.Errorf("%w: the context is not one of a Streamable HTTP session", ErrNotResumable)
	}
	if s.res == nil {
		return fmt.Errorf("%w: the Endpoint has no event store", ErrNotResumable)
	}
	return s.res.closeConn(ctx, id)
}
