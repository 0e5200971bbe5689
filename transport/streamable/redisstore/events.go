package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Append stores the next event of a stream on a Redis stream, trimmed to
// about MaxEvents, in one round trip, and returns its id: the stream's key,
// '~' and the Redis entry id.
func (s *Store) Append(ctx context.Context, session, stream string, data []byte) (id string, err error) {
	defer s.observe("append", time.Now(), &err)
	if !visible(stream) || strings.Contains(stream, "~") {
		return "", fmt.Errorf("redisstore: append: stream key %q: want visible ASCII without '~'", stream)
	}
	key, streams := s.eventsKey(session, stream), s.streamsKey(session)
	var add *redis.StringCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		add = p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: s.cfg.maxEvents, Approx: true, Values: []string{"d", string(data)}})
		p.PExpire(ctx, key, s.ttl())
		p.SAdd(ctx, streams, stream)
		p.PExpire(ctx, streams, s.ttl())
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("redisstore: append: %w", err)
	}
	return stream + "~" + add.Val(), nil
}

// Replay returns the stream lastID belongs to and its events after
// lastID.
func (s *Store) Replay(ctx context.Context, session, lastID string) (stream string, events []streamable.Event, err error) {
	defer s.observe("replay", time.Now(), &err)
	stream, xid, ok := parseEventID(lastID)
	if !ok {
		return "", nil, fmt.Errorf("redisstore: replay %q: %w", lastID, streamable.ErrUnknownEvent)
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
			return "", nil, fmt.Errorf("redisstore: replay %q: %w", lastID, streamable.ErrUnknownEvent)
		}
	}
	events = make([]streamable.Event, 0, len(entries))
	for _, e := range entries {
		d, _ := e.Values["d"].(string)
		ev := streamable.Event{ID: stream + "~" + e.ID}
		if d != "" {
			ev.Data = []byte(d)
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
	del := []string{streams}
	for _, st := range keys {
		del = append(del, s.eventsKey(session, st))
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
