package streamable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-mcp/vigil/internal/replication"
)

// A shared session's state (transport.Shared) is read-your-writes across
// replicas: when StoreState returns on one replica, every other replica
// that holds a view of the session has applied the state, so the client's
// next request sees it wherever the load balancer sends it. The storing
// replica publishes the state (Cluster.StoreState says how many other
// replicas it reached), each of them applies it and answers with a
// RelayStateSeen carrying the state's digest, and StoreState waits for
// those answers, up to stateSeenWait. A replica making a view reads the
// record again once it follows the session's relays (see followState), so
// that no state stored between its first read and its subscription is
// missed. The states are whole: the one the cluster stored last is the
// session's. A replica that stored a state ignores the states of others
// relayed before its own comes back through its subscription: the cluster
// stored them first (relays come in the order they were published), so its
// own is newer.

// relayedKey marks the context of a client message another replica
// relayed, which the server handles on the relay's delivery goroutine: a
// StoreState there does not wait for the replicas' answers, which that
// goroutine delivers.
type relayedKey struct{}

// stateSeenWait bounds how long StoreState waits for the other replicas
// to apply a state, and a DELETE for them to drop their views
// (shared_end.go); one that does not answer in time (stalled, or leaving)
// is logged, and the state (or the end) holds everywhere else.
const stateSeenWait = 2 * time.Second

// seenWait is a StoreState waiting for the replicas it reached to apply
// its state, or a DELETE waiting for them to drop their views
// (shared_end.go).
type seenWait struct {
	digest [sha256.Size]byte // the state's; zero for a DELETE
	need   int               // replicas to hear from; -1 until the cluster said
	seen   map[string]bool
	done   chan struct{}
	closed bool
}

// SharedState returns the newest state of the session this replica has:
// the record's when the view was made, or one a relay brought since.
func (c sharedConn) SharedState() []byte {
	v := c.view
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fresh = false
	return v.state
}

// SetStateUpdate has update called with the states other replicas store,
// and at once with one that came since SharedState was read.
func (c sharedConn) SetStateUpdate(update func(state []byte)) {
	v := c.view
	v.applyMu.Lock()
	defer v.applyMu.Unlock()
	v.mu.Lock()
	v.update = update
	state, fresh := v.state, v.fresh
	v.fresh = false
	v.mu.Unlock()
	if fresh && update != nil {
		update(state)
	}
}

// StoreState stores the session's state in the cluster, and returns once
// every other replica holding a view of the session applied it, or after
// stateSeenWait.
func (c sharedConn) StoreState(ctx context.Context, state []byte) error {
	v := c.view
	if limit := c.h.cfg.maxState; limit > 0 && len(state) > limit {
		return c.stateTooLarge(ctx, len(state))
	}
	w := v.awaitSeen(&v.stateWait, sha256.Sum256(state))
	defer v.dropSeen(&v.stateWait, w)
	v.mu.Lock()
	if v.ownStates == nil {
		v.ownStates = make(map[[sha256.Size]byte]ownState)
	}
	own := v.ownStates[w.digest]
	v.ownStates[w.digest] = ownState{n: own.n + 1, since: time.Now()}
	v.mu.Unlock()
	others, err := v.cluster.StoreState(ctx, c.id, state)
	if err != nil {
		v.forgetOwnState(w.digest) // no relay of it comes (or one comes, and finds nothing)
		return err
	}
	v.mu.Lock()
	v.state = bytes.Clone(state)
	v.mu.Unlock()
	if ctx.Value(relayedKey{}) != nil {
		return nil
	}
	if late, got := v.waitSeen(ctx, w, others, c.done); late {
		c.h.cfg.logger.Warn("streamable: replicas of a shared session did not confirm its new state in time; they may serve the old one",
			"session", c.id, "replicas", others, "confirmed", got, "waited_seconds", stateSeenWait.Seconds())
	}
	return nil
}

// errStateTooLarge ends a shared session whose state is over the cap.
var errStateTooLarge = errors.New("streamable: the shared session's state is larger than the cap (WithMaxStateBytes)")

// stateTooLarge ends the session everywhere rather than store a state of
// size bytes, over the cap: a session no other replica could serve as it
// is would fail there in ways the client cannot understand, while a 404
// tells it to start again.
func (c sharedConn) stateTooLarge(ctx context.Context, size int) error {
	c.h.cfg.logger.Warn("streamable: a shared session's state is too large to store; the session ends",
		"session", c.id, "bytes", size, "max", c.h.cfg.maxState)
	if c.h.cfg.onCut != nil {
		c.h.cfg.onCut(CutStateTooLarge)
	}
	if _, err := c.view.cluster.Delete(context.WithoutCancel(ctx), c.id); err != nil {
		c.h.cfg.logger.Warn("streamable: cannot delete a shared session", "session", c.id, "error", err)
	}
	c.endView(errStateTooLarge)
	return fmt.Errorf("%w: %d bytes, at most %d", errStateTooLarge, size, c.h.cfg.maxState)
}

// followState takes state, the record's as read once the view follows the
// session's relays, unless a relay brought one meanwhile: relays come in
// the order they were published, all after the subscription, so the last
// one is the newest.
func (v *view) followState(state []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.relayed && state != nil {
		v.state = state
	}
}

// stateRelayed applies a state another replica stored, unless one stored
// here is newer (its relay has not come back yet), and answers it with its
// digest either way: this replica serves a state at least as new.
func (s *session) stateRelayed(state []byte) {
	v := s.view
	v.applyMu.Lock()
	v.mu.Lock()
	var update func([]byte)
	if !v.ownStatePendingLocked() {
		v.state, v.relayed = state, true
		update = v.update
		v.fresh = update == nil
	}
	v.mu.Unlock()
	if update != nil {
		update(state)
	}
	v.applyMu.Unlock()
	digest := sha256.Sum256(state)
	_ = s.publish(context.Background(), replication.RelayStateSeen, digest[:])
}

// ownStateBack marks a state stored here as come back through the
// subscription: the states relayed after it are newer.
func (v *view) ownStateBack(state []byte) { v.forgetOwnState(sha256.Sum256(state)) }

// forgetOwnState ends the wait for one relay of the state of digest stored
// here: it came back, or was never published.
func (v *view) forgetOwnState(digest [sha256.Size]byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if own := v.ownStates[digest]; own.n > 1 {
		own.n--
		v.ownStates[digest] = own
	} else {
		delete(v.ownStates, digest)
	}
}

// ownState counts the relays of one state stored here that have not come
// back, since the last such store.
type ownState struct {
	n     int
	since time.Time
}

// ownStatePendingLocked reports whether a state stored here has not come
// back yet, forgetting those waited for longer than stateSeenWait (their
// relay was lost, to a reconnection say: waiting on would ignore the other
// replicas' states for good); under v.mu.
func (v *view) ownStatePendingLocked() bool {
	for digest, own := range v.ownStates {
		if time.Since(own.since) > stateSeenWait {
			delete(v.ownStates, digest)
		}
	}
	return len(v.ownStates) > 0
}

// stateSeenBy records that replica applied the state of digest.
func (v *view) stateSeenBy(replica string, digest []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, w := range v.stateWait {
		if bytes.Equal(w.digest[:], digest) {
			w.seen[replica] = true
			w.check()
		}
	}
}

// awaitSeen registers, in *waits, a wait for the other replicas' answers
// about digest, before the cluster publishes what they answer: an answer
// may come before the cluster returns.
func (v *view) awaitSeen(waits *[]*seenWait, digest [sha256.Size]byte) *seenWait {
	w := &seenWait{digest: digest, need: -1, seen: make(map[string]bool), done: make(chan struct{})}
	v.mu.Lock()
	*waits = append(*waits, w)
	v.mu.Unlock()
	return w
}

// waitSeen waits for need replicas to answer w (need is what the cluster
// said it reached), up to stateSeenWait, or until ctx or stop is done. late
// reports that it gave up after stateSeenWait, answered how many had
// answered then.
func (v *view) waitSeen(ctx context.Context, w *seenWait, need int, stop <-chan struct{}) (late bool, answered int) {
	v.mu.Lock()
	w.need = need
	w.check()
	v.mu.Unlock()
	timer := time.NewTimer(stateSeenWait)
	defer timer.Stop()
	select {
	case <-w.done:
	case <-timer.C:
		v.mu.Lock()
		defer v.mu.Unlock()
		return true, len(w.seen)
	case <-ctx.Done():
	case <-stop:
	}
	return false, 0
}

// dropSeen ends the wait w, one of *waits.
func (v *view) dropSeen(waits *[]*seenWait, w *seenWait) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if i := slices.Index(*waits, w); i >= 0 {
		*waits = slices.Delete(*waits, i, i+1)
	}
}

// check ends the wait once every replica reached answered; under the
// view's mu.
func (w *seenWait) check() {
	if !w.closed && w.need >= 0 && len(w.seen) >= w.need {
		w.closed = true
		close(w.done)
	}
}
