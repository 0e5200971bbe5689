package replication

import "context"

// SessionCounter counts each caller's concurrent sessions against a
// limit, such as a count that replicas share. Acquire counts session, a
// new session of caller, and reports true, or reports false when caller
// holds limit already (with an error: the count is unavailable, and the
// session is refused). Release counts session out: without a Cluster when
// it ends, however it ends; with a Cluster when a client deletes it (a
// shared session that expires idle ends in the cluster, not on a replica:
// the counter must let its sessions expire after the idle timeout itself).
// caller is then the deleting request's, which may differ in address from
// the creating one's without a principal. It must be safe for concurrent
// use.
type SessionCounter interface {
	Acquire(ctx context.Context, caller, session string, limit int) (bool, error)
	Release(caller, session string)
}
