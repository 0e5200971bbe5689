package streamable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// session is one 2025-era MCP session: the transport.Conn its server reads,
// fed by POSTs, writing to the streams of the requests. Attached to a
// server that takes a transport.Driven (see transport.Attacher), an idle session is
// only this state: it holds no goroutine, no timer and no buffer.
type session struct {
	h         *Endpoint
	id        string
	idHeader  []string // {id}: the Mcp-Session-Id header's value, shared by its responses and never modified
	principal string
	caller    string                 // whom the quotas count it against (quota.go)
	release   func()                 // gives back its place in the caller's session quota; nil when none
	inbox     chan transport.Message // to Serve's read loop; nil for an attached session
	done      chan struct{}
	once      sync.Once
	endErr    error

	mu      sync.Mutex
	streams map[transport.ID]*stream // open POST streams, by request id; nil when none is
	get     *stream                  // the standalone GET stream, if open
	onEnd   func(error)              // set by the server (transport.Driven)

	res  *resumer // resume.go: set with an event store, which then owns the streams
	view *view    // shared.go: set with a cluster; then s is this replica's view of the session

	// Idle expiry (expiry.go): deadline is when the session expires, moved
	// by every request; due and slot, guarded by the expiry's lock, are its
	// place in the expiry's heap (slot -1: in none).
	deadline atomic.Int64
	due      int64
	slot     int

	dispatch atomic.Pointer[transport.Dispatcher] // set by the server (transport.Inline)

	// initialized: the client posted notifications/initialized here; until
	// then the session expires after the init timeout (expiry.go).
	initialized atomic.Bool

	// joined: the server has it take the Endpoint's multicasts
	// (multicast.go), from JoinMulticast until the session ends.
	joined atomic.Bool

	// The client's GET streams (presence.go): how many are open, and when
	// the client last left one (unix nanoseconds; 0: never).
	gets    atomic.Int32
	getLeft atomic.Int64
	// onGetLeft is called when the client leaves a GET stream (presence.go).
	onGetLeft atomic.Pointer[func()]
}

var (
	_ transport.Conn            = (*session)(nil)
	_ transport.Inline          = (*session)(nil)
	_ transport.Driven          = (*session)(nil)
	_ transport.MulticastMember = (*session)(nil)
)

// Multicast returns the Endpoint's multicast; nil for a resumable or
// shared session, whose events the event store or the cluster carry (see
// transport.MulticastMember).
func (s *session) Multicast() transport.Multicast {
	if s.res != nil || s.view != nil {
		return nil
	}
	return s.h.cast
}

// JoinMulticast has the session's standalone GET stream write the
// Endpoint's multicasts from now on (see transport.MulticastMember).
func (s *session) JoinMulticast() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended() || s.joined.Load() || s.Multicast() == nil {
		return
	}
	s.joined.Store(true)
	s.h.cast.joined.Add(1)
}

// SessionID returns the Mcp-Session-Id of s: see transport.SessionIDer.
func (s *session) SessionID() string { return s.id }

// AdmitsRequests reports whether the Endpoint asks the server's Shedder
// about each request of the session (see transport.Admitter).
func (s *session) AdmitsRequests() bool { return s.h.cfg.shedder != nil }

// SetDispatch lets the server run each message on the POST that brought
// it (see transport.Inline).
func (s *session) SetDispatch(d transport.Dispatcher) {
	s.dispatch.Store(&d)
}

// SetEnd has end called when the session ends (see transport.Driven).
func (s *session) SetEnd(end func(error)) {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		end(s.readErr())
		return
	default:
	}
	s.onEnd = end
	s.mu.Unlock()
}

// attached reports whether the server runs s without a read loop (see
// transport.Attacher): then every message goes through dispatch.
func (s *session) attached() bool { return s.inbox == nil }

// deliverInline hands m to the server on the caller's goroutine, if the
// server asked for that; it reports whether it did.
func (s *session) deliverInline(stream context.Context, m transport.Message) bool {
	d := s.dispatch.Load()
	if d == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
	}
	(*d).Dispatch(stream, m)
	return true
}

// newSession returns a session of h; attached: its server runs it without
// a read loop (see transport.Attacher); v: its view of a shared session (nil when
// unshared), set before the expiry, whose timeout reads it, has s.
func newSession(h *Endpoint, id, principal string, attached bool, v *view) *session {
	s := &session{h: h, id: id, principal: principal, done: make(chan struct{}), slot: -1, view: v}
	if id != "" {
		s.idHeader = []string{id}
	}
	if !attached {
		s.inbox = make(chan transport.Message)
	}
	if h.cfg.events != nil {
		s.res = newResumer(s, h.cfg.events)
	}
	h.expiry.add(s)
	return s
}

// standaloneMark stands for the standalone stream where none is open.
var standaloneMark = &stream{}

var errIdle = errors.New("streamable: session expired after being idle")

// touch restarts the idle clock.
func (s *session) touch() { s.h.expiry.touch(s) }

// terminate ends the session: Read fails, or the server's end function
// (transport.Driven) is called, so that the server cancels the handlers
// with the transport-close cause; nothing waits for them here.
func (s *session) terminate(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.endErr = err
		close(s.done)
		if s.joined.Load() {
			s.h.cast.joined.Add(-1)
		}
		end := s.onEnd
		s.onEnd = nil
		if s.get != nil {
			s.get.out.signal() // its goroutine sees the end (serveGet)
		}
		s.mu.Unlock()
		s.h.expiry.remove(s)
		if s.release != nil {
			s.release()
		}
		if v := s.view; v != nil {
			v.stopRelays()
		}
		if s.res != nil && s.view == nil {
			s.res.end()
		} else if s.res != nil {
			// A shared session's events are the cluster's: they go with the
			// session (Cluster.Delete, or expiry), not with a view.
			s.res.ended.Store(true)
		}
		if end != nil {
			end(s.readErr())
		}
	})
}

// answerEnded answers a request whose session ended before its answer:
// with terminated, or, when only this replica's view of a shared session
// ended (the replica is shutting down) and nothing was written yet, with
// 503 and Retry-After, so that the request is tried on another replica,
// which serves the session.
func (s *session) answerEnded(st *stream, id transport.ID, terminated *transport.Response) {
	if s.view != nil && s.ended() {
		busy := &transport.Response{ID: id, Error: &transport.Error{Code: int64(protocol.CodeServerBusy), Message: "this replica is shutting down; retry"}}
		if st.refuse(http.StatusServiceUnavailable, "1", busy) {
			if s.h.cfg.onReject != nil {
				s.h.cfg.onReject(protocol.RejectOther)
			}
			return
		}
	}
	st.shutDown(terminated)
}

// EndAnswer implements transport.EndAnswerer: the answer Close and
// answerEnded gave, or give, request id, whose session ends before its
// answer. The server asks once the session ended or as it ends it (its
// close of the session follows).
func (s *session) EndAnswer(id transport.ID) *transport.Error {
	var st *stream
	if s.res != nil {
		st = s.res.streamOf(id)
	} else {
		s.mu.Lock()
		st = s.streams[id]
		s.mu.Unlock()
	}
	if st == nil {
		return nil
	}
	terminated := &transport.Error{Code: int64(protocol.CodeServerBusy), Message: "session terminated"}
	var busy *transport.Error
	if s.view != nil {
		busy = &transport.Error{Code: int64(protocol.CodeServerBusy), Message: "this replica is shutting down; retry"}
	}
	return st.endAnswerOf(terminated, busy)
}

// ended reports whether the session ended (here: a view may end while its
// shared session goes on).
func (s *session) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// readErr is the error Read returns once the session ended.
func (s *session) readErr() error {
	if errors.Is(s.endErr, errDeleted) || errors.Is(s.endErr, errIdle) {
		return fmt.Errorf("streamable: read: %w: %w: %w", transport.ErrPeerGone, s.endErr, io.EOF)
	}
	return fmt.Errorf("streamable: read: %w: %w", transport.ErrClosed, s.endErr)
}

// Read returns the next message a POST brought.
func (s *session) Read(ctx context.Context) (transport.Message, error) {
	select {
	case m := <-s.inbox:
		return m, nil
	case <-s.done:
		return nil, s.readErr()
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// push hands a message to the session's read loop.
func (s *session) push(ctx context.Context, m transport.Message) error {
	select {
	case s.inbox <- m:
		return nil
	case <-s.done:
		return transport.ErrClosed
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Write routes a message: a response to its request's stream; a message
// related to a request to that request's stream; anything else to the GET
// stream.
func (s *session) Write(ctx context.Context, m transport.Message) error {
	select {
	case <-s.done:
		return fmt.Errorf("streamable: write: %w", transport.ErrClosed)
	default:
	}
	if s.res != nil {
		return s.res.write(ctx, m)
	}
	s.mu.Lock()
	target := route(ctx, m, s.h.cfg.mode, s.streams, s.get)
	standalone := s.view != nil && target == nil && forStandalone(ctx, m, s.h.cfg.mode, s.streams, standaloneMark)
	s.mu.Unlock()
	if standalone {
		if transport.BroadcastFromContext(ctx) {
			return nil // every replica's server sends it: the one carrying the stream too
		}
		return s.relayStandalone(ctx, m) // another replica may carry it (shared.go)
	}
	if target == nil {
		return fmt.Errorf("streamable: write: no open stream for the message: %w", transport.ErrStreamGone)
	}
	return target.deliver(m)
}

// route picks the stream a message of a session goes to, the one write
// routing of both kinds of session (plain and resumable): a response goes to
// its request's stream; a message related to a request (progress, a log
// record, a client call made by its handler) to that request's stream, or
// to the standalone GET stream in JSON mode, while the request's stream is
// open; anything else to the standalone stream. The zero S means no stream
// is open for it.
func route[S comparable](ctx context.Context, m transport.Message, mode ResponseMode, byRequest map[transport.ID]S, standalone S) S {
	var none S
	switch m := m.(type) {
	case *transport.Response:
		return byRequest[m.ID]
	case *transport.Request:
		id, related := transport.RelatedRequestFromContext(ctx)
		if !related {
			return standalone
		}
		target := byRequest[id]
		if target != none && mode == ResponseJSON {
			return standalone
		}
		return target
	}
	return none
}

// markCancelled notes on the stream of the request a notifications/cancelled
// names that the client wants no answer.
func (s *session) markCancelled(n *transport.Request) {
	var p struct {
		RequestID transport.ID `json:"requestId"`
	}
	if json.Unmarshal(n.Params, &p) != nil || !p.RequestID.IsValid() {
		return
	}
	s.mu.Lock()
	st := s.streams[p.RequestID]
	s.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		st.cancelled = true
		st.mu.Unlock()
	}
}

// Close ends the session from the server's side. The server calls it once
// it has cancelled the session's handlers with the session's cause; only
// then are the POSTs still open answered (a handler that ignores
// cancellation cannot hold them). Answering them earlier would let their
// clients' disconnects race the session's cause into the handlers.
func (s *session) Close() error {
	s.terminate(errSessionEnded)
	s.mu.Lock()
	for _, st := range s.streams {
		if st.fallback != nil {
			go st.shutDown(st.fallback) // writes: not under s.mu
		}
	}
	s.mu.Unlock()
	return nil
}

// handOff gives the server a message that does not run on the POST that
// brought it: a request of a resumable session (resume.go), which outlives
// its POST when its stream is resumed, or an Abandoned. It goes through the
// read loop or, for an attached session, through dispatch: a request on a
// goroutine of its own, with a stream that is never done, and an Abandoned
// on the caller's goroutine. The stream is ctx without its cancellation:
// the request's arrival context is its own POST's, with its principal, not
// the one of the request that made the session.
func (s *session) handOff(ctx context.Context, m transport.Message) error {
	if !s.attached() {
		return s.push(ctx, m)
	}
	select {
	case <-s.done:
		return transport.ErrClosed
	default:
	}
	if req, ok := m.(*transport.Request); ok && s.res != nil {
		stream := context.WithoutCancel(ctx)
		go func() {
			s.deliverInline(stream, req)
			s.res.handled(req.ID) // resume.go
		}()
		return nil
	}
	s.deliverInline(context.WithoutCancel(ctx), m)
	return nil
}

// serveRequest runs the POST of one request: open its stream, hand the
// request to the session and wait for the answer, the client's departure or
// the session's end.
//
// Its frame stands over the whole handler when the server runs it inline
// (docs/limits.md, "The request's stack"): opening the stream and waiting
// for an answer from elsewhere are done in frames of their own.
func (s *session) serveRequest(w http.ResponseWriter, r *http.Request, req *transport.Request) {
	if s.res != nil {
		s.res.serveRequest(w, r, req)
		return
	}
	st, terminated := s.openStream(w, r, req)
	if st == nil {
		return // refused
	}
	defer s.closeStream(req.ID, st)
	// The handler runs here, on this goroutine; the server cancels it if
	// the client leaves (the stream refuses writes from then on), and
	// terminate() answers for it if the session ends (a handler that ignores
	// cancellation cannot hold the answer back).
	if s.deliverInline(r.Context(), req) {
		s.answerEnded(st, req.ID, terminated) // nothing written means the session ended under it
		return
	}
	s.awaitAnswer(r, req, st, terminated)
}

// openStream opens the stream that answers req and returns it with the
// answer it gets if the session ends first; nil when it refused req, whose
// id is in flight already or over the session's limit.
//
//go:noinline
func (s *session) openStream(w http.ResponseWriter, r *http.Request, req *transport.Request) (*stream, *transport.Response) {
	st := newStream(w, s.h.cfg.mode, nil, s.idHeader, &s.h.limit)
	st.quotas, st.caller = s.h.quotas, s.caller
	terminated := st.terminated(req.ID)
	st.client, st.fallback = r.Context(), terminated // before terminate() can see st
	s.mu.Lock()
	switch {
	case s.streams[req.ID] != nil:
		s.mu.Unlock()
		s.h.reject(w, http.StatusConflict, req.ID, protocol.CodeInvalidRequest, protocol.RejectDuplicateID, protocol.RejectDuplicateID.Message())
		return nil, nil
	case len(s.streams) >= s.h.cfg.maxInFlight:
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		s.h.reject(w, http.StatusTooManyRequests, req.ID, protocol.CodeServerBusy, protocol.RejectInFlightLimit, protocol.RejectInFlightLimit.Message())
		return nil, nil
	}
	if s.streams == nil {
		s.streams = s.h.streamTables.Get().(map[transport.ID]*stream)
	}
	s.streams[req.ID] = st
	s.mu.Unlock()
	return st, terminated
}

// closeStream forgets st, the stream of request id, if it is still that
// request's.
func (s *session) closeStream(id transport.ID, st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams[id] != st {
		return
	}
	delete(s.streams, id)
	if len(s.streams) == 0 {
		// An idle session holds no table: the next request of any session
		// takes this one back.
		s.h.streamTables.Put(s.streams)
		s.streams = nil
	}
}

// awaitAnswer hands req to the session's read loop and waits until st is
// answered, r's client leaves (the handler is cancelled) or the session
// ends (terminated answers).
func (s *session) awaitAnswer(r *http.Request, req *transport.Request, st *stream, terminated *transport.Response) {
	if err := s.push(r.Context(), req); err != nil {
		st.shutDown(terminated)
		return
	}
	select {
	case <-st.written():
		st.shutDown(nil)
	case <-r.Context().Done():
		// The answer can no longer be delivered: cancel the handler.
		st.shutDown(nil)
		cause := fmt.Errorf("streamable: the client closed the stream of request %s: %w", req.ID.String(), transport.ErrStreamGone)
		_ = s.push(context.Background(), &transport.Abandoned{ID: req.ID, Err: cause})
	case <-s.done:
		s.answerEnded(st, req.ID, &transport.Response{ID: req.ID, Error: &transport.Error{Code: int64(protocol.CodeServerBusy), Message: "session terminated"}})
	}
}

// serveGet runs the session's standalone SSE stream until the client or the
// session leaves.
func (s *session) serveGet(w http.ResponseWriter, r *http.Request) {
	if s.res != nil {
		s.res.serveGet(w, r)
		return
	}
	st := newStandalone(w, s.idHeader, &s.h.limit)
	st.out.quotas, st.out.caller = s.h.quotas, s.caller
	// Before the headers: a client that has them gets every later multicast.
	bell, seen := s.h.cast.listen()
	s.mu.Lock()
	if s.get != nil {
		s.mu.Unlock()
		s.h.reject(w, http.StatusConflict, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectDuplicateID, "a GET stream is already open for this session")
		return
	}
	s.get = st
	st.mu.Lock()
	err := st.startSSE()
	st.mu.Unlock()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.get == st {
			s.get = nil
		}
		s.mu.Unlock()
		st.out.close()
		st.shutDown(nil)
	}()
	if err != nil {
		return
	}
	var tick <-chan time.Time
	if d := s.h.cfg.keepAlive; d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	// The stream's goroutine wakes for its own queue (and the session's
	// end: terminate signals it), for the Endpoint's multicasts and for the
	// client's departure. The client's context is watched here, not with a
	// context.AfterFunc, which would cost the request's context a table of
	// children per stream.
	done := r.Context().Done()
	for {
		select {
		case <-st.out.wake:
			if s.ended() || st.writeQueued() != nil {
				return
			}
		case <-bell:
			var err error
			if bell, seen, err = st.writeCast(s.h.cast, seen, s.joined.Load()); err != nil {
				return
			}
		case <-tick:
			if st.comment("keep-alive") != nil {
				return
			}
		case <-done:
			return
		}
	}
}
