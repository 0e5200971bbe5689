package redisshare

import (
	"context"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// eventStore is the Redis store as the endpoint's event store: its
// replayed events as package streamable's.
type eventStore struct{ *redisstore.Store }

func (s eventStore) Replay(ctx context.Context, session, lastID string) (string, []streamable.Event, error) {
	stream, events, err := s.Store.Replay(ctx, session, lastID)
	return stream, replication.EventsAs[streamable.Event](events), err
}
