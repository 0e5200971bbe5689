package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/transport"
)

// StreamCloseGrace bounds how long the cause of a request whose stream
// closed stays provisional. Its handler is cancelled at once, with a cause
// that reads as [ErrStreamClose] until it settles, once, into
// [ErrClientCancel] if the client's notifications/cancelled for the request
// comes within the grace (go-sdk aborts the POST, then sends it),
// [ErrTransportClose] if the client shows it is gone (its session ends, or
// its standalone stream closes too, as every connection of a killed process
// does), else [ErrStreamClose]. [CancelReasonOf] waits for it, and so does
// the outcome's seal. 250 ms: go-sdk's notification comes a few ms after the
// close on loopback, and one sent on a new TLS connection across a
// continent (three round trips of some 70 ms) within it (docs/operations.md,
// "Cancellation causes").
const StreamCloseGrace = 250 * time.Millisecond

// streamClose is the cause a request is cancelled with when its stream
// closes: provisional (ErrStreamClose, with why) until settled, once, into
// what the grace showed (see [StreamCloseGrace]). The request's context
// keeps it as its cause, whose reading changes once, when it settles:
// errors.Is answers by the settled cause from then on. await settles it
// when nothing else did, for the seal (finish) and for CancelReasonOf. The
// seal waits rather than being parked in the session: the request stays
// in flight meanwhile, so the notification finds it where it looks (the
// in-flight table, and for a stateless request the transport's registry),
// a drain waits for it, its id stays taken, and it has one outcome.
type streamClose struct {
	at      time.Time     // when the server saw the stream end
	ss      *Session      // the request's, whose client's presence tells
	pending [2]error      // ErrStreamClose and why: what it reads as until settled
	state   atomic.Uint32 // closePending, closeSettling, closeSettled
	final   [1]error      // the settled cause; written before state is closeSettled
	done    chan struct{} // closed once settled
}

const (
	closePending uint32 = iota
	closeSettling
	closeSettled
)

// newStreamClose returns the provisional cause of a request whose stream
// closed now in ss; why says how (it wraps transport.ErrStreamGone or
// transport.ErrPeerGone).
func newStreamClose(ss *Session, why error) *streamClose {
	return &streamClose{at: time.Now(), ss: ss, pending: [2]error{ErrStreamClose, why}, done: make(chan struct{})}
}

// settle makes cause the settled cause, unless another settled it first;
// it reports whether it did.
func (c *streamClose) settle(cause error) bool {
	if !c.state.CompareAndSwap(closePending, closeSettling) {
		return false
	}
	c.final[0] = cause
	c.state.Store(closeSettled)
	close(c.done)
	return true
}

// settled reports whether the cause is settled.
func (c *streamClose) settled() bool { return c.state.Load() == closeSettled }

func (c *streamClose) Error() string {
	if c.settled() {
		return c.final[0].Error()
	}
	return c.pending[0].Error() + ": " + c.pending[1].Error()
}

// Unwrap returns the settled cause, or ErrStreamClose and why until then.
func (c *streamClose) Unwrap() []error {
	if c.settled() {
		return c.final[:]
	}
	return c.pending[:]
}

// streamClosed cancels inf because its stream closed, with a stream
// close's provisional cause (unless something cancelled it first).
func (inf *inflight) streamClosed(why error) {
	inf.closing.Store(true) // before the cancel: whoever sees the cause sees it
	inf.cancel(newStreamClose(inf.ss, why))
}

// streamClose returns the cause of inf's context when it is a stream
// close. Most requests' streams never close: one atomic load tells.
func (inf *inflight) streamClose() *streamClose {
	if !inf.closing.Load() {
		return nil
	}
	c, _ := context.Cause(inf.ctx).(*streamClose) //nolint:errorlint // the cause itself, never a wrapping of it
	return c
}

// The settled causes a stream close may take besides the client's cancel.
var (
	// errStandaloneClosed: the client's standalone stream closed with the
	// request's.
	errStandaloneClosed = fmt.Errorf("%w: the client's standalone stream closed too", ErrTransportClose)
)

// gone returns the settled cause of a stream close whose client is gone,
// as evidence (which wraps ErrTransportClose) shows.
func (c *streamClose) gone(evidence error) error {
	return fmt.Errorf("%w: %w", evidence, c.pending[1])
}

// alone returns the settled cause of a stream close with no evidence of
// anything else: ErrStreamClose.
func (c *streamClose) alone() error {
	return fmt.Errorf("%w: %w", ErrStreamClose, c.pending[1])
}

// settleCause settles the cause of inf, when its stream's close cancelled
// it, before its outcome is sealed (see streamClose.await).
//
//go:noinline
func (inf *inflight) settleCause() {
	if c := inf.streamClose(); c != nil {
		c.await()
	}
}

// await returns once c is settled, settling it if nothing else did: at
// once when the client's cancel, the session's end or the standalone
// stream's close came already, else after waiting out what is left of the
// grace. Any goroutine may wait; the first to settle it decides, and what
// each reads after is the same.
func (c *streamClose) await() {
	if c.settled() {
		return
	}
	ss := c.ss
	if ss.standaloneClosedNear(c.at) {
		c.settle(c.gone(errStandaloneClosed))
	} else if wait := StreamCloseGrace - time.Since(c.at); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-c.done:
		case <-t.C:
		}
		t.Stop()
	}
	if !c.settled() && ss.standaloneClosedNear(c.at) {
		c.settle(c.gone(errStandaloneClosed))
	}
	c.settle(c.alone()) // unless settled already
	<-c.done            // another's settle may still be writing it
}

// standaloneClosedNear reports whether the client's standalone stream
// closed within the grace of at, either way, and is not open again (see
// transport.ClientPresence).
func (ss *Session) standaloneClosedNear(at time.Time) bool {
	p, ok := transport.As[transport.ClientPresence](ss.conn)
	if !ok {
		return false
	}
	closed := p.StandaloneClosedAt()
	if closed.IsZero() {
		return false
	}
	d := closed.Sub(at)
	return d >= -StreamCloseGrace && d <= StreamCloseGrace
}

// settleStandaloneClosed settles, as gone, the causes of the requests in
// flight whose stream closed within the grace before the client closed its
// standalone stream, as it just did: a killed client closes its POST's
// connection and its GET's about together, and the settle need not wait
// out the grace to tell.
func (ss *Session) settleStandaloneClosed() {
	ss.settleGone(errStandaloneClosed, func(c *streamClose) bool { return ss.standaloneClosedNear(c.at) })
}

// settleOnEnd settles, as gone, the causes of the requests in flight whose
// stream closed within the grace before the session ended, when its cause
// is the client's departure: their client is gone. Session.cancel calls
// it for sessions only: a stateless request's session is only the
// request's, and its end says nothing more.
func (ss *Session) settleOnEnd() {
	cause := context.Cause(ss.ctx)
	if !errors.Is(cause, ErrTransportClose) {
		return
	}
	ss.settleGone(cause, func(c *streamClose) bool { return time.Since(c.at) <= StreamCloseGrace })
}

// settleGone settles, as gone with evidence, the unsettled causes of the
// requests in flight whose stream closed and near says are near enough.
func (ss *Session) settleGone(evidence error, near func(*streamClose) bool) {
	ss.mu.Lock()
	var closing []*inflight
	for _, inf := range ss.st.incoming.all() {
		if inf.ctx.Err() != nil {
			closing = append(closing, inf)
		}
	}
	ss.mu.Unlock()
	for _, inf := range closing {
		if c := inf.streamClose(); c != nil && !c.settled() && near(c) {
			c.settle(c.gone(evidence))
		}
	}
}

// clientCancelled settles the cause of inf as the client's cancel when its
// stream's close cancelled it first: the notification came before its
// outcome was sealed.
func (inf *inflight) clientCancelled(cause error) {
	if c := inf.streamClose(); c != nil {
		c.settle(cause)
	}
}
