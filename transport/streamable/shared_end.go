package streamable

import (
	"context"
	"crypto/sha256"
	"errors"

	"github.com/vigil-mcp/vigil/internal/replication"
)

// Deleting a shared session is read-your-writes too: when a replica
// answers the client's DELETE, every other replica that held a view of the
// session has dropped it, so that the client's next request naming the
// session is refused (404) wherever the load balancer sends it, and not
// served by a replica the end has not reached yet. The deleting replica
// removes the record and publishes the end (Cluster.Delete says how many
// other replicas it reached); each of them drops its view and answers with
// a RelayEndSeen; the DELETE waits for those answers, up to stateSeenWait.
// A replica without a view loads the record, which is gone. One whose
// subscription was down when the end was published (Redis did not count
// it) finds the record gone at its next renewal (touchShared), at most a
// tenth of the idle timeout later, and ends its view then.

// endShared ends a shared session everywhere: its record goes, and it
// returns once every other replica's view of it ended, or after
// stateSeenWait (logged), or when ctx is done.
func (h *Endpoint) endShared(ctx context.Context, s *session) error {
	v := s.view
	w := v.awaitSeen(&v.endWait, [sha256.Size]byte{})
	defer v.dropSeen(&v.endWait, w)
	others, err := v.cluster.Delete(context.WithoutCancel(ctx), s.id)
	if err != nil {
		return err
	}
	if late, got := v.waitSeen(ctx, w, others, nil); late {
		h.cfg.logger.Warn("streamable: replicas of a deleted shared session did not confirm its end in time; they may serve it a little longer",
			"session", s.id, "replicas", others, "confirmed", got, "waited_seconds", stateSeenWait.Seconds())
	}
	return nil
}

// endRelayed ends this replica's view of a session another replica
// deleted, and tells the other replicas so.
func (s *session) endRelayed() {
	s.endView(errDeleted)
	_ = s.publish(context.Background(), replication.RelayEndSeen, nil)
}

// endView ends this replica's view of a session that ended with err
// elsewhere: from now on its id is loaded, and found gone.
func (s *session) endView(err error) {
	h := s.h
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	h.mu.Unlock()
	s.terminate(err)
}

var errSessionGone = errors.New("streamable: the shared session's record is gone (deleted or expired)")

// endSeenBy records that replica dropped its view of the session.
func (v *view) endSeenBy(replica string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, w := range v.endWait {
		w.seen[replica] = true
		w.check()
	}
}
