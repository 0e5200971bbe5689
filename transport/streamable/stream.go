package streamable

import (
	"net/http"
	"sync"

	"github.com/vigil-mcp/vigil/transport"
)

// stream is one HTTP response carrying messages: the answer to one request
// (JSON, or SSE once a message comes before the response), or a GET stream.
type stream struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	mode     ResponseMode
	status   func(code int64) int // HTTP status of a JSON error answer
	sessHdr  string               // Mcp-Session-Id to send, if any
	mu       sync.Mutex
	state    streamState
	shut     bool          // the HTTP handler returned: write nothing more
	final    chan struct{} // closed once the response was written
	finalled bool
}

type streamState uint8

const (
	undecided streamState = iota
	answeredJSON
	streaming
)

func newStream(w http.ResponseWriter, mode ResponseMode, status func(int64) int, sessHdr string) *stream {
	return &stream{w: w, rc: http.NewResponseController(w), mode: mode, status: status, sessHdr: sessHdr, final: make(chan struct{})}
}

func (st *stream) headers(contentType string) {
	h := st.w.Header()
	h.Set("Content-Type", contentType)
	if st.sessHdr != "" {
		h.Set(headerSessionID, st.sessHdr)
	}
	if contentType == "text/event-stream" {
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
	}
}

// startSSE turns the response into an SSE stream; st.mu is held.
func (st *stream) startSSE() error {
	st.headers("text/event-stream")
	st.w.WriteHeader(http.StatusOK)
	st.state = streaming
	return st.rc.Flush()
}

// deliver writes one message. A response ends the stream's purpose.
func (st *stream) deliver(m transport.Message) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shut || st.state == answeredJSON {
		return transport.ErrStreamGone
	}
	resp, isResp := m.(*transport.Response)
	data, err := transport.AppendMessage(nil, m)
	if err != nil {
		return err
	}
	if st.state == undecided {
		if isResp && st.mode != ResponseSSE {
			st.headers("application/json")
			status := http.StatusOK
			if resp.Error != nil && st.status != nil {
				status = st.status(resp.Error.Code)
			}
			st.w.WriteHeader(status)
			_, err := st.w.Write(data)
			st.state = answeredJSON
			st.finish()
			return wrapStream(err)
		}
		if err := st.startSSE(); err != nil {
			return wrapStream(err)
		}
	}
	if err := writeEvent(st.w, "", data); err != nil {
		return wrapStream(err)
	}
	if err := st.rc.Flush(); err != nil {
		return wrapStream(err)
	}
	if isResp {
		st.finish()
	}
	return nil
}

// finish marks the response as written; st.mu is held.
func (st *stream) finish() {
	if !st.finalled {
		st.finalled = true
		close(st.final)
	}
}

// shutDown forbids further writes (the HTTP handler is returning). If
// nothing was written yet, fallback answers first (a JSON-RPC error, so that
// the client never gets an empty 200).
func (st *stream) shutDown(fallback *transport.Response) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.state == undecided && fallback != nil {
		data, _ := transport.AppendMessage(nil, fallback)
		st.headers("application/json")
		st.w.WriteHeader(http.StatusOK)
		_, _ = st.w.Write(data)
		st.state = answeredJSON
	}
	st.shut = true
}

func wrapStream(err error) error {
	if err == nil {
		return nil
	}
	return transport.WrapIOError("streamable: write", false, errStream(err))
}

// errStream marks a write error on one stream as ErrStreamGone.
func errStream(err error) error { return &streamError{err} }

type streamError struct{ err error }

func (e *streamError) Error() string { return e.err.Error() }
func (e *streamError) Unwrap() []error {
	return []error{transport.ErrStreamGone, e.err}
}
