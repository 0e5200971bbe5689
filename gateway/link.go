package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Restarts of an upstream wait, after a setback, from minBackoff,
// doubling up to maxBackoff. A setback is a start that failed, or a
// session that ended within stableAfter of its start; a session that
// lived longer wipes the slate clean, and the first to end young after
// that is started again at once (a killed upstream serves the next call).
const (
	minBackoff  = time.Second
	maxBackoff  = 30 * time.Second
	stableAfter = 30 * time.Second
)

// link is one upstream session kept for its users: the catalog's, or
// one downstream session's. It is started at its first use, and started
// again by the first use after the upstream went; callers wait for a
// start under way with their own context.
type link struct {
	m         *mount
	ss        *server.Session      // the downstream session it serves; nil for the catalog's
	stateless bool                 // a 2026-07-28 session, for 2026-07-28 callers (era2026.go)
	caps      json.RawMessage      // a tool view's session: the capabilities it declares (views.go)
	given     *upstream.Process    // a tool view's session: the process it starts on, taken by its start (views.go)
	ctx       context.Context      // ends when the link is shut: a start under way is abandoned
	shut      context.CancelFunc   // see close
	start     chan struct{}        // 1-buffered: held by the one caller starting the session
	conn      atomic.Pointer[conn] // the current connection; nil before the first start, after a failed one, once shut
	roots     coalesced            // the caller's roots changes not yet told upstream (roots.go)
	// owner, for an upstream with Authorize, is the context (without its
	// cancellation) of the call that made a caller's link: what no call
	// sends on it (initialized, the GET stream, the DELETE) carries that
	// caller's credentials, never the gateway's or another's.
	owner context.Context

	mu        sync.Mutex    // guards the three below; never held during I/O
	started   time.Time     // when conn started
	nextStart time.Time     // no start before this, after a setback
	backoff   time.Duration // the wait after the next setback

	// guarded by m.mu (a downstream session's link only):
	caller   string    // whom its downstream session's first call came from, for the share (share.go)
	busy     int       // calls using the link
	lastUsed time.Time // when its last call ended
}

// newLink returns a link of m's upstream for the downstream session ss
// (nil: the catalog's).
func (m *mount) newLink(ss *server.Session) *link {
	l := &link{m: m, ss: ss, start: make(chan struct{}, 1), lastUsed: m.now()}
	l.ctx, l.shut = context.WithCancel(m.ctx)
	return l
}

// live returns the link's session while it lives, else nil.
func (l *link) live() *upstream.Session {
	if c := l.conn.Load(); c != nil && c.session.Err() == nil {
		return c.session
	}
	return nil
}

// session returns the link's live session: the current one, or, when it
// has gone or was never started, a new one, unless a setback is too
// recent. A caller waits for another's start with ctx; a start is bounded
// by ctx and by the link's life.
func (l *link) session(ctx context.Context) (*upstream.Session, error) {
	if s := l.live(); s != nil {
		return s, nil
	}
	select {
	case l.start <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-l.ctx.Done():
		return nil, upstream.ErrClosed
	}
	s, old, err := l.restart(ctx)
	if old != nil { // before close, which waits for l.start, and Close for closing
		l.m.closing.Go(old.close) // gone: its process has exited, or soon will
	}
	<-l.start
	return s, err
}

// restart, holding l.start, returns the live session, starting one when
// there is none, and the connection that went, for the caller to close.
func (l *link) restart(ctx context.Context) (s *upstream.Session, old *conn, err error) {
	if l.ctx.Err() != nil {
		return nil, nil, upstream.ErrClosed
	}
	if s := l.live(); s != nil {
		return s, nil, nil // another caller's start
	}
	now := l.m.now()
	l.mu.Lock()
	if old = l.conn.Swap(nil); old != nil && !errors.Is(old.session.Err(), streamable.ErrUnknownSession) {
		// An HTTP upstream that forgot the session is no setback: it
		// restarted, or the session expired, and a new one is due at once.
		if now.Sub(l.started) < stableAfter { // it died young: back off, but restart the first at once
			l.nextStart = now.Add(l.backoff)
			l.backoff = nextBackoff(l.backoff)
		} else {
			l.backoff = 0
		}
	}
	wait := l.nextStart.Sub(now)
	l.mu.Unlock()
	switch {
	case wait > 0:
		return nil, old, notReady(l.m.up.Name, wait) // lifecycle.go
	case l != l.m.catalog && l.m.state.load() == StateFailing:
		return nil, old, notReady(l.m.up.Name, l.m.catalog.retryIn()) // no start while the listing session cannot start
	}
	octx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.ctx, func() { cancel(upstream.ErrClosed) })
	octx, cancelStart := context.WithTimeoutCause(octx, l.m.startTimeout, l.m.startTimeoutError())
	c, err := l.startLogged(octx)
	cancelStart()
	stop()
	cancel(nil)
	switch {
	case l.ctx.Err() != nil: // shut meanwhile
		if c != nil {
			c.close()
		}
		return nil, old, upstream.ErrClosed
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		return nil, old, err // the caller left: not the upstream's failure
	case errors.Is(err, errNoEra):
		return nil, old, err // it serves, in another era: no setback
	case err != nil && l != l.m.catalog && l.m.up.Refused != nil && refused(err):
		return nil, old, err // the caller's credentials refused (HTTP 401), not the upstream's failure: the caller renews them (relay.go)
	case err != nil:
		l.mu.Lock()
		l.backoff = nextBackoff(l.backoff)
		l.nextStart = l.m.now().Add(l.backoff)
		retry := l.backoff
		l.mu.Unlock()
		l.m.log.Warn("upstream did not start", "upstream", l.m.up.Name, "error", err, "retry_in_seconds", retry.Seconds())
		if l == l.m.catalog {
			l.m.setState(StateFailing)
		} else {
			l.m.checkCatalog() // is the upstream down?
		}
		return nil, old, notReady(l.m.up.Name, retry) // the log has why: the caller gets no URL, command or error text
	}
	if l.caps == nil { // a tool view's listing is not counted a start (views.go)
		l.m.starts.Add(1)
	}
	l.mu.Lock()
	again := !l.started.IsZero()
	l.started = l.m.now()
	l.mu.Unlock()
	l.conn.Store(c)
	switch {
	case l.ss != nil:
		l.m.log.Debug("upstream session opened", "upstream", l.m.up.Name, "session", l.ss.ID(), c.pid())
	case again:
		if l == l.m.catalog && l.m.listed.Load() {
			l.m.setState(StateReady) // what it listed is served; it is listed again (keepCatalog)
		}
		l.m.log.Info("upstream started again", "upstream", l.m.up.Name, c.pid())
	}
	return c.session, old, nil
}

// startProgressEvery is how often a start under way is logged.
const startProgressEvery = 10 * time.Second

// startLogged opens the link's session with ctx, as mount.open, and logs
// every startProgressEvery while it waits, so that a slow start (npx
// fetching a package on its first run) shows in the log as it goes.
func (l *link) startLogged(ctx context.Context) (*conn, error) {
	done := make(chan struct{})
	var progress sync.WaitGroup
	progress.Go(func() {
		tick := time.NewTicker(startProgressEvery)
		defer tick.Stop()
		for waited := startProgressEvery; ; waited += startProgressEvery {
			select {
			case <-done:
				return
			case <-tick.C:
				l.m.log.Info("upstream starting", "upstream", l.m.up.Name, "waited_seconds", waited.Seconds(), "start_timeout_seconds", l.m.startTimeout.Seconds())
			}
		}
	})
	defer progress.Wait()
	defer close(done)
	return l.m.open(ctx, l)
}

// startTimeoutError is why a start was abandoned: it outlasted the start
// timeout, which it names with the knob that sets it.
type startTimeoutError struct{ timeout time.Duration }

func (e startTimeoutError) Error() string {
	return "no answer within " + e.timeout.String() + ", the start timeout (Config.StartTimeout; vigil -upstream-start-timeout)"
}

// startTimeoutError returns why a start of m's was abandoned at its
// start timeout.
func (m *mount) startTimeoutError() error { return startTimeoutError{m.startTimeout} }

// setback closes s, the link's session, which started but could not
// serve (its first listing failed), and makes the next start wait out
// the backoff, as after a start that failed.
func (l *link) setback(s *upstream.Session) {
	l.mu.Lock()
	l.backoff = nextBackoff(l.backoff)
	l.nextStart = l.m.now().Add(l.backoff)
	l.mu.Unlock()
	if c := l.conn.Load(); c != nil && c.session == s && l.conn.CompareAndSwap(c, nil) {
		l.m.closing.Go(c.close)
	}
}

// nextBackoff returns the backoff after one of b: doubled, from
// minBackoff up to maxBackoff.
func nextBackoff(b time.Duration) time.Duration {
	return min(max(2*b, minBackoff), maxBackoff)
}

// retryIn returns how long until the link may start again.
func (l *link) retryIn() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.nextStart.Sub(l.m.now()), 0)
}

// close shuts the link for good: a start under way is abandoned, the
// session is closed and its process ended, waiting for it; later uses
// fail with [upstream.ErrClosed]. It is idempotent.
func (l *link) close() {
	l.shut()
	l.start <- struct{}{} // a start under way ends soon: its context has
	c := l.conn.Swap(nil)
	<-l.start
	if c != nil {
		c.close()
	}
}
