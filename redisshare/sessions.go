package redisshare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// sessionCounter counts each principal's sessions over every replica on
// one Redis, so that a per-principal session quota holds however many
// replicas there are: a sorted set per principal of its session ids,
// scored by when each expires. Redis sees the principal and the session
// ids only as their pseudonyms under the cluster key. A session a replica never released (the
// replica died) expires after the TTL unless Acquired again, so the count
// heals itself. It is safe for concurrent use.
type sessionCounter struct {
	client    redis.UniversalClient
	max       int
	idle      func() time.Duration          // the sessions' idle timeout (redisstore.Store.IdleTimeout)
	pseudonym func(prefix, v string) string // redisstore.Store.Pseudonym
}

// Session-count keys: the prefix, then the principal's pseudonym.
const (
	sessionKeyPrefix = "vigil:sessions:"
	// defaultSessionTTL is the entries' TTL when sessions never idle out.
	defaultSessionTTL = 24 * time.Hour
)

// acquireSession drops the principal's expired entries, then adds or
// refreshes the session when it is there already or the principal holds
// fewer than max; else it answers in how many milliseconds the oldest
// entry expires. Redis's clock decides, the same for every replica.
var acquireSession = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return -1
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) - now)
`)

// sessionCounter returns the counter of at most limit sessions per
// principal (limit > 0); entries expire after the sessions' idle timeout,
// the endpoint's (24 hours when they never idle out).
func (s *Shared) sessionCounter(limit int) *sessionCounter {
	return &sessionCounter{client: s.client, max: limit, idle: s.store.IdleTimeout, pseudonym: s.store.Pseudonym}
}

// SessionQuota returns the counter of the endpoint's session quota
// ([streamable.Quotas]'s SessionCounter) that holds each caller to limit
// sessions over every replica: a sorted set per caller on Redis of its
// session ids, scored by when each expires (after the sessions' idle
// timeout, unless the endpoint acquires it again on the session's
// activity), so that the sessions of a replica that died expire and the
// count heals itself. The idle timeout is the endpoint's, which its New
// hands over ([Shared.Options]). Give the Quotas the same limit as
// Sessions.
func (s *Shared) SessionQuota(limit int) streamable.SessionCounter {
	return sessionQuota{s.sessionCounter(limit)}
}

// sessionQuota is a sessionCounter as the endpoint's session quota.
type sessionQuota struct{ c *sessionCounter }

// releaseTimeout bounds the Redis round trip that counts a session out.
const releaseTimeout = 2 * time.Second

func (q sessionQuota) Acquire(ctx context.Context, caller, session string, _ int) (bool, error) {
	ok, _, err := q.c.Acquire(ctx, caller, session)
	return ok, err
}

func (q sessionQuota) Release(caller, session string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = q.c.Release(ctx, caller, session) // on failure the entry expires after the idle timeout
}

// ttl is the entries' TTL: the sessions' idle timeout, or
// defaultSessionTTL when they never idle out.
func (c *sessionCounter) ttl() time.Duration {
	if d := c.idle(); d > 0 {
		return d
	}
	return defaultSessionTTL
}

// Acquire counts sessionID as one of principal's sessions, unless the
// principal holds max already: then ok is false and retryAfter is when its
// oldest entry expires. Acquiring a session counted already refreshes its
// entry and is always ok: call it again on the session's activity (at
// most every TTL/2 is enough) so that a live session does not expire. On
// a Redis error ok is false: the caller decides in memory alone.
func (c *sessionCounter) Acquire(ctx context.Context, principal, sessionID string) (ok bool, retryAfter time.Duration, err error) {
	if sessionID == "" {
		return false, 0, errors.New("redisshare: empty session id")
	}
	ms, err := acquireSession.Run(ctx, c.client, []string{c.key(principal)}, c.pseudonym("", sessionID), c.max, c.ttl().Milliseconds()).Int64()
	if err != nil {
		return false, 0, fmt.Errorf("redisshare: counting a session: %w", err)
	}
	if ms < 0 {
		return true, 0, nil
	}
	return false, time.Duration(ms) * time.Millisecond, nil
}

// Release stops counting sessionID, at its end.
func (c *sessionCounter) Release(ctx context.Context, principal, sessionID string) error {
	if err := c.client.ZRem(ctx, c.key(principal), c.pseudonym("", sessionID)).Err(); err != nil {
		return fmt.Errorf("redisshare: releasing a session: %w", err)
	}
	return nil
}

// Count returns how many sessions principal holds (expired entries
// excluded), for tests.
func (c *sessionCounter) Count(ctx context.Context, principal string) (int64, error) {
	t, err := c.client.Time(ctx).Result()
	if err != nil {
		return 0, err
	}
	return c.client.ZCount(ctx, c.key(principal), "("+strconv.FormatInt(t.UnixMilli(), 10), "+inf").Result()
}

// key is principal's key, named by its pseudonym.
func (c *sessionCounter) key(principal string) string {
	return c.pseudonym(sessionKeyPrefix, principal)
}
