package redisstore

import (
	"context"
	"fmt"
	"time"
)

// UseRequestState records the requestState of digest (a digest of the
// sealed state, fixed-length, which tells nothing of it) as used for ttl,
// and reports whether this was its first use on any replica (SET NX): the
// server's WithUsedRequestStates.
func (s *Store) UseRequestState(ctx context.Context, digest string, ttl time.Duration) (first bool, err error) {
	defer s.observe("use_state", time.Now(), &err)
	first, err = s.rdb.SetNX(ctx, s.cfg.prefix+"state:"+digest, 1, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("redisstore: requestState: %w", err)
	}
	return first, nil
}

// UseDPoPProof records the DPoP proof of digest (a fixed-length digest of
// its key and jti, which tells nothing of either, and never a token) as
// used for ttl, and reports whether this was its first use on any replica
// (SET NX). Its key is the digest's pseudonym under the cluster key.
func (s *Store) UseDPoPProof(ctx context.Context, digest string, ttl time.Duration) (first bool, err error) {
	defer s.observe("use_dpop_proof", time.Now(), &err)
	first, err = s.rdb.SetNX(ctx, s.Pseudonym(s.cfg.prefix+"dpop:", digest), 1, max(ttl, time.Second)).Result()
	if err != nil {
		return false, fmt.Errorf("redisstore: DPoP proof: %w", err)
	}
	return first, nil
}
