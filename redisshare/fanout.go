package redisshare

import (
	"context"
	"errors"
)

// fanout is the Store as the server's Fanout (server.WithFanout), which
// the server calls inline, when a tool is added at start as when a list
// changes: while Redis does not answer a broadcast fails at once, and
// otherwise it waits at most readyWindow, so that neither a start nor a
// change waits on Redis (the other replicas miss what Redis could not
// carry; the server logs it).
type fanout struct{ s *Shared }

// errNotAnswering is a broadcast's error while Redis does not answer.
var errNotAnswering = errors.New("no answer from Redis: the other replicas are not told")

func (f fanout) Broadcast(ctx context.Context, event []byte) error {
	if !f.s.answering() {
		return errNotAnswering
	}
	ctx, cancel := context.WithTimeout(ctx, readyWindow)
	defer cancel()
	return f.s.store.Broadcast(ctx, event)
}

func (f fanout) ReceiveBroadcasts(deliver func(event []byte)) (cancel func(), err error) {
	return f.s.store.ReceiveBroadcasts(deliver)
}
