package streamable

import (
	"context"
	"net/http"
	"time"

	"github.com/vigil-mcp/vigil/transport"
)

// serveInline runs req, a request of a resumable session answered with
// JSON, on the goroutine of its POST, as a session that keeps no events
// does: most such answers are plain JSON with nothing before them, and a
// goroutine of their own (handOff's) costs its start, its stack's growth
// and a wake-up more. The request still outlives its POST: it runs
// without the POST's cancellation, and what it sends once its stream is
// an SSE stream with an event id is kept for a resumption. A client that
// leaves meanwhile is handled as await does, when it leaves (leave, on a
// goroutine of context.AfterFunc), and its connection closed then, not
// when the request ends; the POST returns only after that, so that
// nothing writes to its response once it has.
func (rs *resumer) serveInline(r *http.Request, req *transport.Request, ls *logical, st *stream, terminated *transport.Response) {
	s := rs.s
	st.mu.Lock()
	st.inline, st.chunked = true, r.ProtoMajor == 1 && r.ProtoMinor == 1
	st.mu.Unlock()
	gone := make(chan struct{})
	stop := context.AfterFunc(r.Context(), func() {
		defer close(gone)
		rs.leave(req, ls, st)
		st.mu.Lock()
		st.hangUpLocked(false)
		st.mu.Unlock()
	})
	ran := s.deliverInline(context.WithoutCancel(r.Context()), req)
	rs.handled(req.ID)
	if !stop() {
		<-gone // the client left: leave has ended st
		return
	}
	if !ran {
		select {
		case <-s.done:
			rs.forget(ls)
			s.answerEnded(st, req.ID, terminated)
			return
		default:
		}
	}
	rs.await(r, req, ls, st, terminated)
}

// hangUpLocked ends st's response while its handler still runs (the
// client left, or the stream was taken over or closed): it takes the
// connection over from net/http and closes it, after the end of the
// chunked body when terminate is set, so that a client still there sees
// the stream end cleanly. Nothing is written to the response afterwards
// (st.shut). A response that cannot be taken over (HTTP/2) ends with its
// handler. st.mu is held.
func (st *stream) hangUpLocked(terminate bool) {
	st.shut = true
	if st.rc == nil {
		st.rc = http.NewResponseController(st.w)
	}
	c, _, err := st.rc.Hijack()
	if err != nil {
		return
	}
	if terminate && st.chunked {
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Write([]byte("0\r\n\r\n"))
	}
	_ = c.Close()
}
