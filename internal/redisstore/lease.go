package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/vigil-mcp/vigil/internal/replication"
)

var _ replication.Leases = (*Store)(nil)

func (s *Store) leaseKey(replica string) string { return s.cfg.prefix + "replica:" + replica }

// RenewLease renews this replica's lease for ttl: the other replicas
// take it for gone once ttl passed without a renewal. Renew it well
// within ttl (every second for a 5-second lease).
func (s *Store) RenewLease(ctx context.Context, ttl time.Duration) (err error) {
	defer s.observe("lease", time.Now(), &err)
	if err := s.rdb.Set(ctx, s.leaseKey(s.replica), time.Now().UTC().Format(time.RFC3339), ttl).Err(); err != nil {
		return fmt.Errorf("redisstore: renew lease: %w", err)
	}
	return nil
}

// ReleaseLease gives this replica's lease up, at a clean exit.
func (s *Store) ReleaseLease(ctx context.Context) error {
	return s.rdb.Del(ctx, s.leaseKey(s.replica)).Err()
}

// Alive reports whether replica holds its lease.
func (s *Store) Alive(ctx context.Context, replica string) (alive bool, err error) {
	defer s.observe("alive", time.Now(), &err)
	n, err := s.rdb.Exists(ctx, s.leaseKey(replica)).Result()
	if err != nil {
		return false, fmt.Errorf("redisstore: lease of %s: %w", replica, err)
	}
	return n == 1, nil
}

// Claim reports whether the caller is the first to claim name in the
// session (SET NX, expiring with the session's events). Its key carries
// the session's tag and the name's (streamTag), never either in clear.
func (s *Store) Claim(ctx context.Context, session, name string) (first bool, err error) {
	defer s.observe("claim", time.Now(), &err)
	first, err = s.rdb.SetNX(ctx, s.key(session, ":claim:", streamTag(name)), s.replica, s.ttl()).Result()
	if err != nil {
		return false, fmt.Errorf("redisstore: claim: %w", err)
	}
	return first, nil
}
