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
