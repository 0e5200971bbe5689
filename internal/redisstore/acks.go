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
	cmd, wait := s.pipeAcked(ctx, func(p redis.Pipeliner) *redis.Cmd { return script.EvalSha(ctx, p, keys, args...) })
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd, wait = s.pipeAcked(ctx, func(p redis.Pipeliner) *redis.Cmd { return script.Eval(ctx, p, keys, args...) })
	}
	s.noteAcks(wait, start)
	return cmd
}

// pipeAcked sends write and WAIT in one pipeline.
func (s *Store) pipeAcked(ctx context.Context, write func(redis.Pipeliner) *redis.Cmd) (*redis.Cmd, *redis.Cmd) {
	var cmd *redis.Cmd
	var wait *redis.Cmd
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // each command's error is its own
		cmd = write(p)
		wait = s.waitCmd(ctx, p)
		return nil
	})
	return cmd, wait
}

// noteAcks counts a WAIT (of a pipeline sent at start) that fewer
// replicas than asked answered.
func (s *Store) noteAcks(wait *redis.Cmd, start time.Time) {
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
