package streamable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/vigil-mcp/vigil/transport"
)

// postInline is Write's POST of req (nil for a response) over t, a plain
// HTTP server's pool, on the caller's goroutine: the request is
// written and its answer's head read there, and its body too when all
// of it has arrived with the head (a JSON answer, usually), so that a
// call costs no goroutine. As with post, the POST runs under the
// connection's lifetime: a caller whose ctx ends before the answer's
// head is read gets its cause at once, and a goroutine waits
// abandonAfter for the answer meanwhile; an SSE answer, or a body still
// on its way, is read by a goroutine too.
func (c *clientConn) postInline(ctx context.Context, t *plainTransport, hreq *http.Request, req *transport.Request) error {
	if !c.enter() {
		return fmt.Errorf("streamable: client: %w", transport.ErrClosed)
	}
	post, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopClose := context.AfterFunc(c.ctx, cancel)
	done := func() { stopClose(); cancel(); c.wg.Done() }
	addr := plainAddr(hreq.URL)
	pc, err := t.get(ctx, addr) // a new connection's dial is the caller's to wait for
	if err != nil {
		done()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return c.postFailed(err)
	}
	stopPost := context.AfterFunc(post, pc.interrupt)
	disarm := pc.watchCaller(ctx, post)
	err = pc.send(hreq)
	peeked := false
	var resp *http.Response
	if err == nil {
		if _, err = pc.br.Peek(1); err == nil {
			peeked = true
			resp, err = pc.head(hreq)
		}
	}
	if !disarm() { // the caller gave up: the POST goes on without it
		go func() {
			defer done()
			time.AfterFunc(abandonAfter, cancel)
			switch {
			case resp != nil:
				c.answeredInline(post, t, pc, addr, stopPost, req, resp)
			case err == nil || !peeked && errors.Is(err, os.ErrDeadlineExceeded) && post.Err() == nil:
				c.finishInline(post, t, pc, addr, stopPost, hreq, req)
			default: // failed, or cut off mid-head: the closed stream is the server's cancel
				stopPost()
				_ = pc.nc.Close()
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					c.lost(req, err)
				}
			}
		}()
		return context.Cause(ctx)
	}
	if err != nil {
		stopPost()
		_ = pc.nc.Close()
		done()
		return c.postFailed(err)
	}
	if resp.ContentLength < 0 || int64(pc.br.Buffered()) < resp.ContentLength {
		go func() {
			defer done()
			c.answeredInline(post, t, pc, addr, stopPost, req, resp)
		}()
		return nil
	}
	c.answeredInline(post, t, pc, addr, stopPost, req, resp)
	done()
	return nil
}

// finishInline reads, for a caller that gave up, the answer's head and
// what follows it, as post does.
func (c *clientConn) finishInline(post context.Context, t *plainTransport, pc *plainConn, addr string, stopPost func() bool, hreq *http.Request, req *transport.Request) {
	resp, err := pc.head(hreq)
	if err != nil {
		stopPost()
		_ = pc.nc.Close()
		c.lost(req, err)
		return
	}
	c.answeredInline(post, t, pc, addr, stopPost, req, resp)
}

// answeredInline reads resp, the answer to the POST of req, as post
// does, and then gives pc back to t's pool when it can serve again.
func (c *clientConn) answeredInline(post context.Context, t *plainTransport, pc *plainConn, addr string, stopPost func() bool, req *transport.Request, resp *http.Response) {
	t.keepBody(resp, pc, addr, stopPost)
	defer func() { _ = resp.Body.Close() }()
	if req != nil && req.Method == "initialize" {
		c.mu.Lock()
		c.session = resp.Header.Get(headerSessionID)
		c.mu.Unlock()
	}
	c.answered(post, req, resp)
}

// postFailed is the error of a POST that got no answer: the connection
// fails, unless it is closing.
func (c *clientConn) postFailed(err error) error {
	if c.ctx.Err() != nil {
		return fmt.Errorf("streamable: client: %w", transport.ErrClosed)
	}
	err = fmt.Errorf("streamable: client: %w: %w", transport.ErrPeerGone, err)
	c.fail(err)
	return err
}

// enter counts a POST on the caller's goroutine among those Close waits
// for, unless Close has begun; it reports whether it did.
func (c *clientConn) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// watchCaller makes ctx's end interrupt the wait for the answer's head;
// disarm stops that, and reports false when ctx ended meanwhile (the
// read deadline is then cleared again, unless post ended too). A late
// interruption of an earlier watch of the connection does nothing.
func (pc *plainConn) watchCaller(ctx, post context.Context) (disarm func() bool) {
	pc.cmu.Lock()
	pc.watch++
	watch := pc.watch
	pc.cmu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		pc.cmu.Lock()
		defer pc.cmu.Unlock()
		if pc.watch == watch {
			_ = pc.nc.SetReadDeadline(time.Unix(1, 0))
		}
	})
	return func() bool {
		if stop() {
			return true
		}
		pc.cmu.Lock()
		pc.watch++
		_ = pc.nc.SetReadDeadline(time.Time{})
		pc.cmu.Unlock()
		if post.Err() != nil {
			pc.interrupt()
		}
		return false
	}
}
