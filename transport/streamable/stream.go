package streamable

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// stream is one HTTP response carrying messages: the answer to one request
// (JSON, or SSE once a message comes before the response), or a GET stream.
type stream struct {
	client   context.Context // the request's: once it is done, nothing more is written
	w        http.ResponseWriter
	rc       *http.ResponseController
	mode     ResponseMode
	status   func(code int64) int // HTTP status of a JSON error answer
	sessHdr  []string             // Mcp-Session-Id to send, if any
	limit    *writeLimit          // the Endpoint's bound on SSE writes; nil: none
	mu       sync.Mutex
	state    streamState
	shut     bool                // the HTTP handler returned: write nothing more
	fallback *transport.Response // the answer if the session ends first
	final    latch               // the response was written
	// cancelled: the client sent notifications/cancelled for the request,
	// so no answer is owed: if none was written, the response ends as an
	// empty event stream rather than with the fallback.
	cancelled  bool
	endAnswer  *transport.Error // what shutDown or refuse answered with, the request unanswered
	cut        bool             // an SSE write timed out: counted once
	inline     bool             // a resumable request's handler runs on the response's goroutine (resume_inline.go)
	chunked    bool             // with inline: the response, if streaming, is HTTP/1.1 chunked
	armedUntil time.Duration    // the write deadline set last, since limit.base (see armLocked)

	// A standalone GET stream's queue (outbox.go): deliver queues there,
	// and the stream's own goroutine writes (writeQueued), encoding each
	// event into buf, kept for the next.
	out *outbox
	buf []byte

	// The quotas that count the answers written on a POST's stream, until
	// written, against caller (quota.go); nil: not counted.
	quotas *quotaState
	caller string

	// The answer for when the session ends first (see terminated), held
	// here rather than allocated apart.
	termResp transport.Response
	termErr  transport.Error
}

type streamState uint8

const (
	undecided streamState = iota
	answeredJSON
	streaming
)

// newStream returns a stream writing to w; sessHdr is the Mcp-Session-Id
// header's value (shared, never modified), nil for none; limit bounds its
// SSE writes (nil: no bound).
func newStream(w http.ResponseWriter, mode ResponseMode, status func(int64) int, sessHdr []string, limit *writeLimit) *stream {
	st := new(stream)
	st.init(w, mode, status, sessHdr)
	st.limit = limit
	return st
}

// smallAnswer is the largest JSON answer written without the write
// timeout: less than the smallest send buffer of a TCP socket.
const smallAnswer = 4 << 10

// writeLimit is an Endpoint's bound on each SSE write, shared by its
// streams: a write (or flush) that cannot complete within timeout, because
// the client stopped reading, fails, and the stream ends; cut counts it.
type writeLimit struct {
	timeout time.Duration // <= 0: no bound
	cut     func(StreamCut)
	base    time.Time // the clock's origin for armedUntil: a monotonic reading, cheaper than time.Now
}

// armLocked gives the next write the write timeout; st.mu is held. A
// deadline is kept while at least the timeout remains of it, so that a
// stream of events changes it (a timer update) at most once per half
// timeout: each write gets between the timeout and one and a half times
// it. A ResponseWriter that has no deadlines (a test recorder) is
// written as it is.
func (st *stream) armLocked() {
	if st.limit == nil || st.limit.timeout <= 0 {
		return
	}
	now := time.Since(st.limit.base) // one monotonic clock reading
	if st.armedUntil-now >= st.limit.timeout {
		return
	}
	st.armedUntil = now + st.limit.timeout + st.limit.timeout/2
	setWriteDeadline(st.w, st.limit.base.Add(st.armedUntil))
}

// setWriteDeadline sets the write deadline of w's connection, as
// http.ResponseController does (through Unwrap), without allocating one.
func setWriteDeadline(w http.ResponseWriter, t time.Time) {
	for {
		switch x := w.(type) {
		case interface{ SetWriteDeadline(time.Time) error }:
			_ = x.SetWriteDeadline(t)
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}

// failedLocked counts a write error that is a timeout, once per stream,
// and returns err; st.mu is held.
func (st *stream) failedLocked(err error) error {
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		st.cutLocked(CutWriteTimeout)
	}
	return err
}

// cutLocked counts the stream's cut, once, with its reason; st.mu is held.
func (st *stream) cutLocked(why StreamCut) {
	if !st.cut && st.limit != nil {
		st.cut = true
		if st.limit.cut != nil {
			st.limit.cut(why)
		}
	}
}

// init sets up st, a zero stream held in another value (see oneShot), as
// newStream does.
func (st *stream) init(w http.ResponseWriter, mode ResponseMode, status func(int64) int, sessHdr []string) {
	st.w, st.mode, st.status, st.sessHdr = w, mode, status, sessHdr
}

// terminated returns the answer to request id for when the session ends
// before it: a server-busy error. It lives in st; call it once, before st
// is shared.
func (st *stream) terminated(id transport.ID) *transport.Response {
	st.termErr = transport.Error{Code: int64(protocol.CodeServerBusy), Message: "session terminated"}
	st.termResp = transport.Response{ID: id, Error: &st.termErr}
	return &st.termResp
}

// endAnswerOf returns the error st answered its request with when the
// session ended under it (shutDown's fallback, or refuse's), or, when
// the session's end has yet to reach it, the one it will answer with:
// fallback, or busy when busy is not nil; nil when it delivers none (its
// client left or cancelled, or an event stream began).
func (st *stream) endAnswerOf(fallback, busy *transport.Error) *transport.Error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.endAnswer != nil {
		return st.endAnswer
	}
	present := st.client == nil || st.client.Err() == nil
	if st.shut || st.state != undecided || st.cancelled || !present {
		return nil
	}
	if busy != nil {
		return busy
	}
	return fallback
}

// responseOverhead is room enough for a result response's envelope around
// its result: jsonrpc, a numeric or short string id, the member names.
const responseOverhead = 64

// Header values, shared and never modified: setting them costs no
// allocation per response.
var (
	valueJSON        = []string{"application/json"}
	valueEventStream = []string{"text/event-stream"}
	valueNoCache     = []string{"no-cache"}
	valueNo          = []string{"no"}
)

func (st *stream) headers(sse bool) {
	h := st.w.Header()
	if st.sessHdr != nil {
		h[headerSessionID] = st.sessHdr
	}
	if !sse {
		h["Content-Type"] = valueJSON
		return
	}
	h["Content-Type"] = valueEventStream
	h["Cache-Control"] = valueNoCache
	h["X-Accel-Buffering"] = valueNo
}

// flush sends what was written so far; st.mu is held.
func (st *stream) flush() error {
	if st.rc == nil {
		st.rc = http.NewResponseController(st.w)
	}
	return st.rc.Flush()
}

// startSSE turns the response into an SSE stream; st.mu is held.
func (st *stream) startSSE() error {
	st.headers(true)
	st.w.WriteHeader(http.StatusOK)
	st.state = streaming
	st.armLocked()
	return st.failedLocked(st.flush())
}

// deliver writes one message, or queues it on a standalone GET stream for
// the stream's goroutine to write. A response ends the stream's purpose.
func (st *stream) deliver(m transport.Message) error {
	if st.out != nil {
		return st.out.post(m)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shut || st.state == answeredJSON || (st.client != nil && st.client.Err() != nil) {
		return transport.ErrStreamGone
	}
	resp, isResp := m.(*transport.Response)
	if st.state == undecided && isResp && st.mode != ResponseSSE {
		return st.answerJSON(resp)
	}
	var buf []byte
	if isResp && resp.Error == nil {
		buf = make([]byte, 0, len(resp.Result)+responseOverhead) // one allocation, not several
	}
	data, err := transport.AppendMessage(buf, m)
	if err != nil {
		return err
	}
	held := st.holdAnswer(len(data))
	defer held.release()
	if st.state == undecided {
		if err := st.startSSE(); err != nil {
			return wrapStream(err)
		}
	}
	st.armLocked()
	if err := writeEvent(st.w, "", data); err != nil {
		return wrapStream(st.failedLocked(err))
	}
	if err := st.flush(); err != nil {
		return wrapStream(st.failedLocked(err))
	}
	if isResp {
		st.finish()
	}
	return nil
}

// largeAnswer is the shortest result that answerJSON writes where it is,
// around its envelope, rather than copied into the envelope first.
const largeAnswer = 16 << 10

// answerJSON writes resp as the JSON answer; st.mu is held and nothing
// was written yet. A large result is written as it is, between its
// envelope's head and its closing brace, with a Content-Length: the
// answer costs no copy of the result, and net/http writes it on
// through its buffers without gathering it.
func (st *stream) answerJSON(resp *transport.Response) error {
	var data, result []byte
	var err error
	if resp.Error == nil && len(resp.Result) >= largeAnswer {
		// The envelope as AppendMessage writes it, up to the result (a
		// one-byte stand-in, cut off with its brace).
		data, err = transport.AppendMessage(make([]byte, 0, responseOverhead), &transport.Response{ID: resp.ID, Result: []byte(resultStandIn)})
		data, result = data[:len(data)-len(resultStandIn)-1], resp.Result
	} else {
		var buf []byte
		if resp.Error == nil {
			buf = make([]byte, 0, len(resp.Result)+responseOverhead) // one allocation, not several
		}
		data, err = transport.AppendMessage(buf, resp)
	}
	if err != nil {
		return err
	}
	held := len(data) + len(result)
	if resp.Shared { // written where it is: it holds no memory of its own
		held = len(data)
	}
	hold := st.holdAnswer(held)
	defer hold.release()
	st.headers(false)
	status := http.StatusOK
	if resp.Error != nil && st.status != nil {
		status = st.status(resp.Error.Code)
		if retry, ok := quotaRetryAfter(resp.Error); ok {
			st.w.Header().Set("Retry-After", retry)
			status = http.StatusTooManyRequests
		}
	}
	// The deadline covers the answer's flush once the handler returns,
	// too: a client that does not read a large answer cannot pin the
	// connection. A small one fits the socket's buffer; unread, it pins
	// at most the client's own request (within its quotas), so it costs
	// no timer.
	if len(data)+len(result) > smallAnswer {
		st.armLocked()
	}
	if result != nil {
		st.w.Header()["Content-Length"] = []string{strconv.Itoa(len(data) + len(result) + 1)}
	}
	st.w.WriteHeader(status)
	_, err = st.w.Write(data)
	if result != nil && err == nil {
		if _, err = st.w.Write(result); err == nil {
			_, err = io.WriteString(st.w, "}")
		}
	}
	st.state = answeredJSON
	st.finish()
	return wrapStream(st.failedLocked(err))
}

// holdAnswer counts an answer of n bytes about to be written against the
// stream's caller and the process until it is written (see
// quotaState.holdAnswer); the hold's release gives them back. A small
// answer, which the socket's buffer takes at once, is not counted.
func (st *stream) holdAnswer(n int) bodyHold {
	if st.quotas == nil || n <= smallAnswer {
		return bodyHold{}
	}
	return st.quotas.holdAnswer(st.caller, n)
}

// resultStandIn stands for a large result in answerJSON's envelope.
const resultStandIn = "0"

// finish marks the response as written; st.mu is held.
func (st *stream) finish() { st.final.fire() }

// answered reports whether the response was written.
func (st *stream) answered() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.final.fired
}

// written returns a channel closed once the response was written. A
// request answered before anyone waits (inline, as a rule) makes none.
func (st *stream) written() <-chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.final.wait()
}

// undecided reports whether nothing was written on the stream yet.
func (st *stream) undecided() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.state == undecided
}

// shutDown forbids further writes (the HTTP handler is returning). If
// nothing was written yet and the client is still there, fallback answers
// first (a JSON-RPC error, so that the client never gets an empty 200).
func (st *stream) shutDown(fallback *transport.Response) {
	st.mu.Lock()
	defer st.mu.Unlock()
	present := st.client == nil || st.client.Err() == nil
	if st.state == undecided && st.cancelled && present {
		_ = st.startSSE()
	}
	if st.state == undecided && fallback != nil && present {
		data, _ := transport.AppendMessage(nil, fallback)
		st.headers(false)
		st.w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		// This answer may come while a handler still runs on the request's
		// goroutine: the connection must not carry the client's next request.
		st.w.Header().Set("Connection", "close")
		st.armLocked()
		st.w.WriteHeader(http.StatusOK)
		_, _ = st.w.Write(data)
		_ = st.flush() // the handler may run on: the client need not wait
		st.state = answeredJSON
		st.endAnswer = fallback.Error
	}
	if st.state == streaming {
		st.armLocked() // the end of the response, written once the handler returns
	}
	st.shut = true
}

// refuse answers with status and a JSON-RPC error instead, and forbids
// further writes, when nothing was written yet; it reports whether it did.
// retryAfter, when not empty, is the Retry-After header.
func (st *stream) refuse(status int, retryAfter string, resp *transport.Response) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.state != undecided || st.shut {
		return false
	}
	data, _ := transport.AppendMessage(nil, resp)
	st.endAnswer = resp.Error
	st.headers(false)
	if retryAfter != "" {
		st.w.Header().Set("Retry-After", retryAfter)
	}
	st.w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	st.armLocked()
	st.w.WriteHeader(status)
	_, _ = st.w.Write(data)
	st.state = answeredJSON
	st.shut = true
	return true
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

// isUndecided reports whether nothing was written on st yet.
func (st *stream) isUndecided() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.state == undecided && !st.shut
}

// open starts the SSE response if nothing was written yet.
func (st *stream) open() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shut || st.state == answeredJSON {
		return transport.ErrStreamGone
	}
	if st.state == undecided {
		return wrapStream(st.startSSE())
	}
	return nil
}

// prime writes a priming event: an id, the retry field and empty data,
// starting the SSE response first if needed.
func (st *stream) prime(id string, retry time.Duration) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked(func() error { return writePriming(st.w, id, retry) }, false)
}

// sendEvent writes one event (without an id when id is ""), starting the
// SSE response first if needed; final ends the response after it. A write
// failure ends the response too.
func (st *stream) sendEvent(id string, data []byte, final bool) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked(func() error { return writeEvent(st.w, id, data) }, final)
}

// replay starts the SSE response and writes events.
func (st *stream) replay(events []Event) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked(func() error {
		for _, ev := range events {
			var err error
			if len(ev.Data) == 0 {
				err = writePriming(st.w, ev.ID, 0)
			} else {
				err = writeEvent(st.w, ev.ID, ev.Data)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}, false)
}

// writeLocked runs write on the SSE response and flushes; st.mu is held.
func (st *stream) writeLocked(write func() error, final bool) error {
	if st.shut || st.state == answeredJSON || st.final.fired {
		return transport.ErrStreamGone
	}
	if st.state == undecided {
		if err := st.startSSE(); err != nil {
			st.finish()
			return wrapStream(err)
		}
	}
	st.armLocked()
	err := write()
	if err == nil {
		err = st.flush()
	}
	err = st.failedLocked(err)
	if err != nil || final {
		st.finish()
	}
	return wrapStream(err)
}

// end finishes the response: its HTTP handler returns.
func (st *stream) end() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.finish()
	if st.inline && st.state == streaming && !st.shut {
		st.hangUpLocked(true) // its handler runs on: the response cannot wait for it (resume_inline.go)
	}
}

// markCancelled notes that the client cancelled the request: a response
// that ends with nothing written is an empty SSE stream (see shutDown).
func (st *stream) markCancelled() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cancelled = true
}

// writeQueued writes the messages queued on a standalone GET stream, one
// flush for the lot; it fails, and the stream is to end, when a write
// fails or when the queue overflowed (counted as CutBacklog).
func (st *stream) writeQueued() error {
	batch, over := st.out.take()
	defer st.out.done(batch)
	st.mu.Lock()
	defer st.mu.Unlock()
	if over {
		st.cutLocked(CutBacklog)
		return errBacklog
	}
	if st.shut {
		return transport.ErrStreamGone
	}
	if len(batch) == 0 {
		return nil
	}
	st.armLocked()
	for _, m := range batch {
		b, err := appendEventMessage(appendEventHead(st.buf[:0], ""), m)
		if err != nil {
			continue // never for what a server writes: skip it, as deliver would refuse it
		}
		b = append(b, eventTail...)
		if cap(b) <= smallAnswer {
			st.buf = b // kept for the next event; a larger one is not held
		}
		if _, err := st.w.Write(b); err != nil {
			return st.failedLocked(err)
		}
	}
	return st.failedLocked(st.flush())
}

// comment writes an SSE comment line.
func (st *stream) comment(text string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shut {
		return transport.ErrStreamGone
	}
	st.armLocked()
	if _, err := st.w.Write([]byte(": " + text + "\n\n")); err != nil {
		return st.failedLocked(err)
	}
	return st.failedLocked(st.flush())
}
