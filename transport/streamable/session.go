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

// session is one 2025-era MCP session: the transport.Conn its Serve reads,
// fed by POSTs, writing to the streams of the requests.
type session struct {
	h         *Endpoint
	id        string
	principal string
	inbox     chan transport.Message
	done      chan struct{}
	once      sync.Once
	endErr    error

	mu      sync.Mutex
	streams map[transport.ID]*stream // open POST streams, by request id
	get     *stream                  // the standalone GET stream, if open
	idle    *time.Timer

	res *resumer // resume.go: set with an event store, which then owns the streams

	dispatch atomic.Pointer[func(context.Context, transport.Message)] // set by the server (transport.Inline)
}

var (
	_ transport.Conn   = (*session)(nil)
	_ transport.Inline = (*session)(nil)
)

// SetDispatch lets the server run each message on the POST that brought
// it (see transport.Inline).
// SessionID returns the Mcp-Session-Id of s: see transport.SessionIDer.
func (s *session) SessionID() string { return s.id }

func (s *session) SetDispatch(dispatch func(context.Context, transport.Message)) {
	s.dispatch.Store(&dispatch)
}

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
	(*d)(stream, m)
	return true
}

func newSession(h *Endpoint, id, principal string) *session {
	s := &session{
		h: h, id: id, principal: principal,
		inbox:   make(chan transport.Message),
		done:    make(chan struct{}),
		streams: make(map[transport.ID]*stream),
	}
	if h.cfg.events != nil {
		s.res = newResumer(s, h.cfg.events)
	}
	if d := h.cfg.idleTimeout; d > 0 {
		s.idle = time.AfterFunc(d, func() {
			h.mu.Lock()
			if h.sessions[s.id] == s {
				delete(h.sessions, s.id)
			}
			h.mu.Unlock()
			s.terminate(errIdle)
		})
	}
	return s
}

var errIdle = errors.New("streamable: session expired after being idle")

// touch restarts the idle timer.
func (s *session) touch() {
	if s.idle != nil {
		s.idle.Reset(s.h.cfg.idleTimeout)
	}
}

// terminate ends the session: Read fails, so Serve cancels the handlers
// with the transport-close cause; nothing waits for them here.
func (s *session) terminate(err error) {
	s.once.Do(func() {
		s.endErr = err
		if s.idle != nil {
			s.idle.Stop()
		}
		close(s.done)
		if s.res != nil {
			s.res.end()
		}
	})
}

// Read returns the next message a POST brought.
func (s *session) Read(ctx context.Context) (transport.Message, error) {
	select {
	case m := <-s.inbox:
		return m, nil
	case <-s.done:
		if errors.Is(s.endErr, errDeleted) || errors.Is(s.endErr, errIdle) {
			return nil, fmt.Errorf("streamable: read: %w: %w: %w", transport.ErrPeerGone, s.endErr, io.EOF)
		}
		return nil, fmt.Errorf("streamable: read: %w: %w", transport.ErrClosed, s.endErr)
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
	s.mu.Unlock()
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
		id, related := transport.RelatedRequest(ctx)
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

// serveRequest runs the POST of one request: open its stream, hand the
// request to the session and wait for the answer, the client's departure or
// the session's end.
func (s *session) serveRequest(w http.ResponseWriter, r *http.Request, req *transport.Request) {
	if s.res != nil {
		s.res.serveRequest(w, r, req)
		return
	}
	st := newStream(w, s.h.cfg.mode, nil, s.id)
	terminated := &transport.Response{ID: req.ID, Error: &transport.Error{Code: int64(protocol.CodeServerBusy), Message: "session terminated"}}
	st.client, st.fallback = r.Context(), terminated // before terminate() can see st
	s.mu.Lock()
	switch {
	case s.streams[req.ID] != nil:
		s.mu.Unlock()
		s.h.reject(w, http.StatusConflict, req.ID, protocol.CodeInvalidRequest, protocol.RejectDuplicateID, protocol.RejectDuplicateID.Message())
		return
	case len(s.streams) >= s.h.cfg.maxInFlight:
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		s.h.reject(w, http.StatusTooManyRequests, req.ID, protocol.CodeServerBusy, protocol.RejectInFlightLimit, protocol.RejectInFlightLimit.Message())
		return
	}
	s.streams[req.ID] = st
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.streams[req.ID] == st {
			delete(s.streams, req.ID)
		}
		s.mu.Unlock()
	}()

	// The handler runs here, on this goroutine; the server cancels it if
	// the client leaves (the stream refuses writes from then on), and
	// terminate() answers for it if the session ends (a handler that ignores
	// cancellation cannot hold the answer back).
	if s.deliverInline(r.Context(), req) {
		st.shutDown(terminated) // nothing written means the session ended under it
		return
	}
	if err := s.push(r.Context(), req); err != nil {
		st.shutDown(terminated)
		return
	}
	select {
	case <-st.final:
		st.shutDown(nil)
	case <-r.Context().Done():
		// The answer can no longer be delivered: cancel the handler.
		st.shutDown(nil)
		cause := fmt.Errorf("streamable: the client closed the stream of request %s: %w", req.ID.String(), transport.ErrStreamGone)
		_ = s.push(context.Background(), &transport.Abandoned{ID: req.ID, Err: cause})
	case <-s.done:
		st.shutDown(&transport.Response{ID: req.ID, Error: &transport.Error{Code: int64(protocol.CodeServerBusy), Message: "session terminated"}})
	}
}

// serveGet runs the session's standalone SSE stream until the client or the
// session leaves.
func (s *session) serveGet(w http.ResponseWriter, r *http.Request) {
	if s.res != nil {
		s.res.serveGet(w, r)
		return
	}
	st := newStream(w, ResponseSSE, nil, s.id)
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
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-tick:
			if st.comment("keep-alive") != nil {
				return
			}
		}
	}
}
