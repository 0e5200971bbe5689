package streamable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/vigil-mcp/vigil/transport"
)

// The bounds of resuming the server's SSE streams.
const (
	// maxResumptions bounds the GETs that resume one request's stream
	// without a new event in between; maxResumptionsTotal, all of them.
	maxResumptions      = 4
	maxResumptionsTotal = 64
	// resumeWait is the wait before resuming when the server gave no
	// retry field; maxRetry caps the one it gives.
	resumeWait = time.Second
	maxRetry   = 10 * time.Second
	// The GET stream is opened again after a wait from minListenBackoff,
	// doubling up to maxListenBackoff while it brings no event; after
	// maxListenFailures attempts in a row that open no stream it is given
	// up (the session serves on without it).
	minListenBackoff  = 100 * time.Millisecond
	maxListenBackoff  = 10 * time.Second
	maxListenFailures = 8
)

// sseState is what resuming an SSE stream needs of what was read of it.
type sseState struct {
	lastID string        // the id of the last event that had one
	retry  time.Duration // the server's retry field; 0 when none
	events int           // the events read, over every connection
	open   bool          // listen: a GET stream was opened once
}

// field records an SSE field line other than data (id, retry).
func (st *sseState) field(line []byte) {
	name, value, _ := bytes.Cut(line, []byte(":"))
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "id":
		if len(value) <= 1024 {
			st.lastID = string(value)
		}
	case "retry":
		if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
			st.retry = time.Duration(ms) * time.Millisecond
		}
	}
}

// wait returns the wait before resuming: the server's retry field,
// capped, or resumeWait.
func (st *sseState) wait() time.Duration {
	if st.retry > 0 {
		return min(st.retry, maxRetry)
	}
	return resumeWait
}

// resumeOrLose resumes the stream of req, cut (why) before its answer, by
// GETs with Last-Event-ID when the server gave its events ids (the
// server replays what req's stream carried since, then carries it on),
// a bounded number of times; a request whose stream cannot be resumed is
// answered with an error, as one cut off.
func (c *clientConn) resumeOrLose(ctx context.Context, req *transport.Request, st *sseState, why error) {
	if errors.Is(why, io.EOF) {
		why = errPolled
	}
	if !c.reachable(ctx, why) {
		return // the connection failed: req ends with its error (client_death.go)
	}
	if req == nil || req.IsNotification() || st.lastID == "" {
		c.lost(req, why)
		return
	}
	stalled := 0
	for range maxResumptionsTotal {
		if stalled == maxResumptions {
			break
		}
		if errors.Is(why, errPolled) {
			if polled, ok := ctx.Value(polledKey{}).(func()); ok {
				polled()
			}
		}
		if !sleep(ctx, st.wait()) {
			c.lost(req, why)
			return
		}
		before := st.events
		resp, err := c.get(ctx, st.lastID)
		if err != nil {
			c.lost(req, fmt.Errorf("%w; resuming it: %w", why, err))
			return
		}
		done, err := c.readEvents(req, resp.Body, st)
		_ = resp.Body.Close()
		if done {
			return
		}
		if errors.Is(err, io.EOF) {
			err = errPolled
		}
		why = err
		if st.events == before {
			stalled++
		} else {
			stalled = 0
		}
	}
	c.lost(req, fmt.Errorf("%w (resumed too often)", why))
}

// errPolled is the cut of a stream the server ended cleanly before the
// answer: a server that wants to be polled (SEP-1699), or one that
// dropped the request.
var errPolled = errors.New("the stream ended before the answer")

// polledKey keys the polled function of WriteNoted in the context of
// the request's POST.
type polledKey struct{}

// errNoStream is the error of a GET the server answered with no SSE
// stream (405: it offers none; or an error status).
var errNoStream = errors.New("the server offered no stream")

// get opens a GET stream under ctx (whose values Credentials sees: a
// resumed call's caller's), resuming after lastID when it is not empty. A
// 404 on the session fails the connection with ErrUnknownSession; no
// answer, when the server then cannot be reached, with ErrPeerGone.
func (c *clientConn) get(ctx context.Context, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	c.headers(req)
	if err := c.credentials(ctx, req); err != nil {
		return nil, fmt.Errorf("the %s's credentials: %w", c.name(), err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set(headerLastEventID, lastID)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		c.unreachable(ctx, err) // no answer: is it gone? (client_death.go)
		return nil, err
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode == http.StatusOK && mediaType == "text/event-stream" {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && c.SessionID() != "" {
		c.fail(fmt.Errorf("streamable: client: HTTP 404 on the session: %w: %w", transport.ErrPeerGone, ErrUnknownSession))
	}
	return nil, fmt.Errorf("%w (HTTP %d)", errNoStream, resp.StatusCode)
}

// listen keeps the GET stream open until the connection closes: a stream
// that ends or is cut is opened again, after a wait that doubles while
// the streams bring no event, with Last-Event-ID when the server gave
// its events ids, so that it replays what was sent meanwhile. It gives up
// when the server offers no stream (405), or after maxListenFailures
// attempts in a row that open none.
func (c *clientConn) listen() {
	var st sseState
	backoff, failures := minListenBackoff, 0
	for {
		before := st.events
		resp, err := c.get(c.ctx, st.lastID)
		switch {
		case c.ctx.Err() != nil:
			return
		case errors.Is(err, errNoStream) && !st.open:
			return // it offers none (405), or refuses: the session serves on without
		case err != nil:
			failures++
			if failures == maxListenFailures {
				return
			}
		default:
			failures = 0
			done, _ := c.readEvents(nil, resp.Body, &st)
			_ = resp.Body.Close()
			if done { // a bound was broken: the connection has failed
				return
			}
			st.open = true
		}
		if st.events > before {
			backoff = minListenBackoff
		}
		if !sleep(c.ctx, max(backoff, min(st.retry, maxRetry))) {
			return
		}
		backoff = min(2*backoff, maxListenBackoff)
	}
}

// sleep waits d, or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
