package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/seal"
)

// appendEvent stores an event and trims the session's events to their
// bounds, keeping the byte count right, in one round trip; it returns the
// event's entry id. KEYS: the stream's events, the session's stream set,
// its byte count. ARGV: data, its counted size, the TTL in ms, the most
// events per stream, the most bytes per session, the stream's tag, the
// prefix of the session's events keys, the size counted for a stream key
// besides twice its name. The oldest events of the stream go first (its
// newest stays), then those of the other streams, whose emptied keys are
// deleted. When streams expired on their own, their bytes are counted
// until the stream appended to is the session's last: then its bytes are
// counted again. The keys other than KEYS are the session's own, in its
// hash slot.
var appendEvent = redis.NewScript(`
local keyCost, overhead = tonumber(ARGV[8]), tonumber(ARGV[9])
local function cost(key) return keyCost + 2 * string.len(key) end
local total = tonumber(redis.call('GET', KEYS[3]) or '0') + tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 then total = total + cost(KEYS[1]) end
local id = redis.call('XADD', KEYS[1], '*', 'd', ARGV[1])
redis.call('SADD', KEYS[2], ARGV[6])
local maxEvents, budget = tonumber(ARGV[4]), tonumber(ARGV[5])
local function dropOldest(key)
  local e = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)
  if #e == 0 then return false end
  redis.call('XDEL', key, e[1][1])
  total = total - string.len(e[1][2][2] or '') - overhead
  return true
end
while redis.call('XLEN', KEYS[1]) > maxEvents do dropOldest(KEYS[1]) end
while total > budget and redis.call('XLEN', KEYS[1]) > 1 do dropOldest(KEYS[1]) end
if total > budget then
  for _, st in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    if st ~= ARGV[6] then
      local key = ARGV[7] .. st
      while total > budget and dropOldest(key) do end
      if redis.call('XLEN', key) == 0 then
        redis.call('DEL', key)
        redis.call('SREM', KEYS[2], st)
        total = total - cost(key)
      end
      if total <= budget then break end
    end
  end
end
if total > budget and redis.call('SCARD', KEYS[2]) == 1 then
  total = cost(KEYS[1])
  for _, e in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
    total = total + string.len(e[2][2] or '') + overhead
  end
end
redis.call('SET', KEYS[3], math.max(total, 0), 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return id`)

// streamKeyCost is the size counted for a stream key besides twice its
// name: about what Redis allocates for a stream with its first entry.
const streamKeyCost = 4800

// Append stores the next event of a stream, sealed under the cluster key
// (bound to the session and stream), on a Redis stream, trimmed to
// MaxEvents and the session's events to their byte bound (see
// [WithMaxSessionEventBytes]), in one round trip, and returns its id: the
// stream's key, '~' and the Redis entry id.
func (s *Store) Append(ctx context.Context, session, stream string, data []byte) (id string, err error) {
	defer s.observe("append", time.Now(), &err)
	if !visible(stream) || strings.Contains(stream, "~") {
		return "", fmt.Errorf("redisstore: append: stream key %q: want visible ASCII without '~'", stream)
	}
	key := s.eventsKey(session, stream)
	size := int64(len(data)+seal.Overhead) + EventOverhead // as stored: sealed
	if size+streamKeyCost+2*int64(len(key)) > s.cfg.maxBytes {
		return "", fmt.Errorf("redisstore: append: an event of %d bytes is larger than a session's events may be (%d)", len(data), s.cfg.maxBytes)
	}
	sealed := s.keys.Seal(make([]byte, 0, len(data)+seal.Overhead), data, ad(domainEvent, session, stream))
	keys := []string{key, s.streamsKey(session), s.bytesKey(session)}
	xid, err := appendEvent.Run(ctx, s.rdb, keys, sealed, size, s.ttl().Milliseconds(), s.cfg.maxEvents, s.cfg.maxBytes,
		streamTag(stream), s.key(session, ":e:", ""), streamKeyCost, EventOverhead).Text()
	if err != nil {
		return "", fmt.Errorf("redisstore: append: %w", err)
	}
	return stream + "~" + xid, nil
}

// Replay returns the stream lastID belongs to and its events after
// lastID: those that open under the cluster key (sealed for this session
// and stream); the others are dropped and counted.
func (s *Store) Replay(ctx context.Context, session, lastID string) (stream string, events []replication.Event, err error) {
	defer s.observe("replay", time.Now(), &err)
	stream, xid, ok := parseEventID(lastID)
	if !ok {
		return "", nil, fmt.Errorf("redisstore: replay %q: %w", lastID, replication.ErrUnknownEvent)
	}
	key := s.eventsKey(session, stream)
	entries, err := s.rdb.XRange(ctx, key, "("+xid, "+").Result()
	if err != nil {
		return "", nil, fmt.Errorf("redisstore: replay: %w", err)
	}
	if len(entries) == 0 {
		n, err := s.rdb.Exists(ctx, key).Result()
		if err != nil {
			return "", nil, fmt.Errorf("redisstore: replay: %w", err)
		}
		if n == 0 {
			return "", nil, fmt.Errorf("redisstore: replay %q: %w", lastID, replication.ErrUnknownEvent)
		}
	}
	events = make([]replication.Event, 0, len(entries))
	evAD := ad(domainEvent, session, stream)
	for _, e := range entries {
		d, _ := e.Values["d"].(string)
		data, err := s.keys.Open(nil, []byte(d), evAD)
		if err != nil {
			s.refuse(RefusedEvent, key)
			continue
		}
		ev := replication.Event{ID: stream + "~" + e.ID}
		if len(data) > 0 {
			ev.Data = data
		}
		events = append(events, ev)
	}
	return stream, events, nil
}

// Forget drops every event of the session.
func (s *Store) Forget(ctx context.Context, session string) (err error) {
	defer s.observe("forget", time.Now(), &err)
	streams := s.streamsKey(session)
	keys, err := s.rdb.SMembers(ctx, streams).Result()
	if err != nil {
		return fmt.Errorf("redisstore: forget: %w", err)
	}
	del := []string{streams, s.bytesKey(session)}
	for _, tag := range keys { // the streams' tags (Append)
		del = append(del, s.key(session, ":e:", tag))
	}
	if err := s.rdb.Del(ctx, del...).Err(); err != nil {
		return fmt.Errorf("redisstore: forget: %w", err)
	}
	return nil
}

// parseEventID splits an event id into its stream key and Redis entry id
// (digits, '-', digits).
func parseEventID(id string) (stream, xid string, ok bool) {
	i := strings.LastIndexByte(id, '~')
	if i <= 0 || !visible(id) {
		return "", "", false
	}
	stream, xid = id[:i], id[i+1:]
	ms, seq, found := strings.Cut(xid, "-")
	if !found || !digits(ms) || !digits(seq) {
		return "", "", false
	}
	return stream, xid, true
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != "" && len(s) <= 20
}
