package redisstore

import (
	"context"

	"github.com/vigil-mcp/vigil/internal/replication"
)

// broadcastTopic is the pseudo-session whose channel carries the servers'
// broadcasts (server.Fanout) to every replica.
const broadcastTopic = "broadcast"

// Broadcast sends a server's event (a list change, a resource update) to
// every other replica: the Store is a server.Fanout.
func (s *Store) Broadcast(ctx context.Context, event []byte) error {
	return s.Publish(ctx, broadcastTopic, replication.Relay{Kind: replication.RelayBroadcast, From: s.replica, Data: event})
}

// ReceiveBroadcasts has deliver called with the events the other replicas
// broadcast, until cancel is called.
func (s *Store) ReceiveBroadcasts(deliver func(event []byte)) (cancel func(), err error) {
	return s.Subscribe(context.Background(), broadcastTopic, func(r replication.Relay) {
		if r.Kind == replication.RelayBroadcast && r.From != s.replica {
			deliver(r.Data)
		}
	})
}
