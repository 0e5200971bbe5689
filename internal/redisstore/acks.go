package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// WithReplicaAcks has each write a client is answered after (a session's
// state, handshake included, and the renewal of its record) wait until n
// of Redis's replicas have it (WAIT, on the write's connection), at most
// timeout, so that a failover that promotes one of them loses no session
// acknowledged to its client. A write that times out is counted to the
// observer as op "replica_ack" and goes on: an answer delayed by at most
// timeout, never refused. n 0 (the default) waits for none.
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return optionFunc(func(c *config) { c.acks, c.ackTimeout = n, timeout })
}

// errNotReplicated is what the observer gets for a write that fewer than
// the replicas WithReplicaAcks names acknowledged in time.
var errNotReplicated = errors.New("redisstore: fewer replicas than asked acknowledged the write in time")

// runAcked runs script, and with WithReplicaAcks WAIT after it on the
// same connection (a pipeline), as script.Run does otherwise.
func (s *Store) runAcked(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if s.cfg.acks == 0 {
		return script.Run(ctx, s.rdb, keys, args...)
	}
	start := time.Now()
	cmd, wait := s.pipeAcked(ctx, keys[0], func(p redis.Pipeliner) *redis.Cmd { return script.EvalSha(ctx, p, keys, args...) })
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd, wait = s.pipeAcked(ctx, keys[0], func(p redis.Pipeliner) *redis.Cmd { return script.Eval(ctx, p, keys, args...) })
	}
	if moved(cmd.Err()) { // the slot of key moved: the Cluster client follows it, without WAIT
		cmd, wait = script.Run(ctx, s.rdb, keys, args...), nil
	}
	s.noteAcks(wait, start)
	return cmd
}

// pipeAcked sends write and WAIT in one pipeline, on the connection of
// key's node (see ackedOn).
func (s *Store) pipeAcked(ctx context.Context, key string, write func(redis.Pipeliner) *redis.Cmd) (*redis.Cmd, *redis.Cmd) {
	var cmd *redis.Cmd
	var wait *redis.Cmd
	_, _ = s.ackedOn(ctx, key).Pipelined(ctx, func(p redis.Pipeliner) error { // each command's error is its own
		cmd = write(p)
		wait = s.waitCmd(ctx, p)
		return nil
	})
	return cmd, wait
}

// ackedOn returns the client a write and its WAIT go through, so that
// both are on one connection: on a Redis Cluster, that of the primary of
// key's slot, as the Cluster client's map names it (a Cluster client
// would send WAIT, which names no key, to any node); else the Store's.
func (s *Store) ackedOn(ctx context.Context, key string) redis.Cmdable {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		if node, err := cc.MasterForKey(ctx, key); err == nil {
			return node
		}
	}
	return s.rdb
}

// moved reports whether err is a Cluster's redirection: the node a write
// went to directly (ackedOn) no longer serves its key.
func moved(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") || redis.HasErrorPrefix(err, "TRYAGAIN")
}

// noteAcks counts a WAIT (of a pipeline sent at start) that fewer
// replicas than asked answered; a nil wait is a write that went without.
func (s *Store) noteAcks(wait *redis.Cmd, start time.Time) {
	if wait == nil {
		if s.cfg.observer != nil {
			s.cfg.observer("replica_ack", time.Since(start), errNotReplicated)
		}
		return
	}
	n, err := wait.Int64()
	if err == nil && n < int64(s.cfg.acks) {
		err = fmt.Errorf("%w: %d of %d", errNotReplicated, n, s.cfg.acks)
	}
	if err != nil && s.cfg.observer != nil {
		s.cfg.observer("replica_ack", time.Since(start), err)
	}
}

// waitCmd queues WAIT on p (go-redis's Pipeliner has no Wait).
func (s *Store) waitCmd(ctx context.Context, p redis.Pipeliner) *redis.Cmd {
	return p.Do(ctx, "WAIT", s.cfg.acks, s.cfg.ackTimeout.Milliseconds())
}
