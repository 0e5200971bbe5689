package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/conncap"
	"github.com/vigil-mcp/vigil/transport"
)

// StreamCloseGrace bounds how long a request whose stream closed waits
// for its cancellation, so that the cause it is cancelled with is final:
// [ErrClientCancel] if the client's notifications/cancelled for it comes
// within the grace (go-sdk aborts the POST, then sends it),
// [ErrTransportClose] if the client shows it is gone (its session ends,
// or its standalone stream closes too, as every connection of a killed
// process does), else [ErrStreamClose] once the grace ran out. Whichever
// comes first cancels the handler's context, once: its context.Cause
// never changes after. The wait costs the handler's Done up to the grace
// on a bare close (a few ms when evidence comes), not the recorded
// duration. 250 ms: go-sdk's notification comes a few ms after the close
// on loopback, and one sent on a new TLS connection across a continent
// within it (docs/operations.md, "Cancellation causes").
const StreamCloseGrace = 250 * time.Millisecond

// streamClose is a request's stream closing while its context is not yet
// cancelled: the cancellation is pending until the first of the grace's
// end (a timer), the client's notification, the standalone stream's close
// or the session's end cancels it, with the cause that one tells. The
// context's cause is set once, so whoever reads it reads the final one.
// It costs a request only when its stream closed. The request stays in
// flight meanwhile, so the notification finds it where it looks (the
// in-flight table, and for a stateless request the transport's registry,
// which lasts as long as the POST's handler), a drain waits for it, its
// id stays taken, and it has one outcome.
type streamClose struct {
	at    time.Time    // when the server saw the stream end
	why   error        // how (wraps transport.ErrStreamGone or transport.ErrPeerGone)
	timer *time.Timer  // the grace's end; set before the close is published
	fired atomic.Int64 // when the pending cancellation fired (UnixNano); 0 until then
}

// gone returns the cause of a stream close whose client is gone, as
// evidence (which wraps ErrTransportClose) shows.
func (c *streamClose) gone(evidence error) error {
	return fmt.Errorf("%w: %w", evidence, c.why)
}

// alone returns the cause of a stream close with no evidence of anything
// else: ErrStreamClose.
func (c *streamClose) alone() error {
	return fmt.Errorf("%w: %w", ErrStreamClose, c.why)
}

// The causes a stream close may take besides the client's cancel.
var (
	// errStandaloneClosed: the client's standalone stream closed with the
	// request's.
	errStandaloneClosed = fmt.Errorf("%w: the client's standalone stream closed too", ErrTransportClose)
)

// streamClosed notes that inf's stream closed, and so that its context is
// to be cancelled: at once, as gone, when the client's standalone stream
// closed near it; else once the grace runs out, unless the client's
// notification or the session's end comes first (see streamClose). It
// does nothing once the context is cancelled or a close is pending.
func (inf *inflight) streamClosed(why error) {
	if inf.close.Load() != nil || inf.ctx.Err() != nil {
		return
	}
	c := &streamClose{at: time.Now(), why: why}
	c.timer = time.AfterFunc(StreamCloseGrace, func() { inf.graceEnded(c) })
	if !inf.close.CompareAndSwap(nil, c) {
		c.timer.Stop()
		return
	}
	inf.ss.closes.Store(true)
	if inf.ss.ctx.Err() != nil { // the session ended meanwhile: its settle may have passed
		inf.cancelPending(inf.causeAtEnd(context.Cause(inf.ss.ctx)))
		return
	}
	if inf.ss.standaloneClosedNear(c.at) {
		inf.cancelPending(c.gone(errStandaloneClosed))
	}
}

// graceEnded cancels inf, whose stream closed a grace ago, unless
// something cancelled it first: as gone if the client's standalone stream
// closed near the close, else as a bare stream close.
func (inf *inflight) graceEnded(c *streamClose) {
	if inf.ss.standaloneClosedNear(c.at) {
		inf.cancelPending(c.gone(errStandaloneClosed))
		return
	}
	inf.cancelPending(c.alone())
}

// cancelPending cancels inf with cause, noting when, if its context is not
// cancelled yet: with a stream close pending, that is when the close's
// cancellation fired (see awaitClose).
func (inf *inflight) cancelPending(cause error) {
	if inf.ctx.Err() != nil {
		return
	}
	if c := inf.close.Load(); c != nil {
		c.fired.CompareAndSwap(0, time.Now().UnixNano())
	}
	inf.cancel(cause)
}

// causeAtEnd returns the cause inf is cancelled with when its session
// ends with cause: cause itself, unless a stream close is pending, which
// the end settles: as gone when the client's departure ended the
// session (not a stateless request's, whose end says nothing more), else
// as a bare close, which came first.
func (inf *inflight) causeAtEnd(cause error) error {
	c := inf.close.Load()
	switch {
	case c == nil:
		return cause
	case !inf.ss.single && errors.Is(cause, ErrTransportClose):
		return c.gone(cause)
	default:
		return c.alone()
	}
}

// awaitClose waits, when inf's stream closed, for the pending cancellation
// to fire (at most the grace), so that its outcome is sealed with the
// final cause, and returns when the request ended: handlerEnded, less the
// wait for the cancellation when the handler was still running then (the
// grace delays the handler's Done and the label, not the request's
// recorded duration). Most streams never close: one load tells.
func (inf *inflight) awaitClose(handlerEnded time.Time) time.Time {
	c := inf.close.Load()
	if c == nil {
		return handlerEnded
	}
	<-inf.ctx.Done()
	c.timer.Stop()
	fired := c.fired.Load()
	if fired == 0 {
		return handlerEnded
	}
	if wait := time.Unix(0, fired).Sub(c.at); wait > 0 && !handlerEnded.Before(time.Unix(0, fired)) {
		return handlerEnded.Add(-wait)
	}
	return handlerEnded
}

// standaloneClosedNear reports whether the client's standalone stream
// closed within the grace of at, either way, and is not open again (see
// conncap.ClientPresence).
func (ss *Session) standaloneClosedNear(at time.Time) bool {
	p := presenceOf(ss.conn)
	if p == nil {
		return false
	}
	closed := p.StandaloneClosedAt()
	if closed.IsZero() {
		return false
	}
	d := closed.Sub(at)
	return d >= -StreamCloseGrace && d <= StreamCloseGrace
}

// presenceOf returns c, or the Conn c wraps, as a conncap.ClientPresence;
// nil when neither is one.
func presenceOf(c transport.Conn) conncap.ClientPresence {
	for c != nil {
		if p, ok := c.(conncap.ClientPresence); ok {
			return p
		}
		w, ok := c.(conncap.Wrapper)
		if !ok {
			return nil
		}
		c = w.Unwrap()
	}
	return nil
}

// settleStandaloneClosed cancels, as gone, the requests in flight whose
// stream closed within the grace before the client closed its standalone
// stream, as it just did: a killed client closes its POST's connection and
// its GET's about together, and their cancellation need not wait out the
// grace to tell.
func (ss *Session) settleStandaloneClosed() {
	for _, inf := range ss.pendingCloses() {
		if c := inf.close.Load(); ss.standaloneClosedNear(c.at) {
			inf.cancelPending(c.gone(errStandaloneClosed))
		}
	}
}

// settleOnEnd cancels the requests in flight whose stream closed and whose
// cancellation is pending with what the session's end, with cause, tells
// (causeAtEnd). Session.cancel calls it before the session's own
// cancellation reaches them, for stateless requests too.
func (ss *Session) settleOnEnd(cause error) {
	for _, inf := range ss.pendingCloses() {
		inf.cancelPending(inf.causeAtEnd(cause))
	}
}

// pendingCloses returns the requests in flight whose stream closed and
// whose context is not cancelled yet. Most sessions never had a stream
// close: one load tells.
func (ss *Session) pendingCloses() []*inflight {
	if !ss.closes.Load() {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var pending []*inflight
	for _, inf := range ss.st.incoming.all() {
		if inf.close.Load() != nil && inf.ctx.Err() == nil {
			pending = append(pending, inf)
		}
	}
	return pending
}
