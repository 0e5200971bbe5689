package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/vigil-mcp/vigil/internal/replication"
)

var _ replication.Forwarder = (*Store)(nil)

// forwarding is a Store's side of Forward: the replica's own channel,
// which carries the requests forwarded to it and the answers to those it
// forwarded.
type forwarding struct {
	once    sync.Once
	err     error
	cancel  func()
	mu      sync.Mutex
	seq     uint64
	waiting map[string]chan []byte
	handle  func(ctx context.Context, req []byte) []byte
}

// replicaTopic is the pseudo-session whose channel is replica's own.
func replicaTopic(replica string) string { return "replica:" + replica }

// listen subscribes to the replica's channel once.
func (s *Store) listen(ctx context.Context) error {
	f := &s.fwd
	f.once.Do(func() {
		f.waiting = make(map[string]chan []byte)
		f.cancel, f.err = s.Subscribe(ctx, replicaTopic(s.replica), s.forwardRelay)
	})
	return f.err
}

// Forward sends req to replica and waits for its answer.
func (s *Store) Forward(ctx context.Context, replica string, req []byte) ([]byte, error) {
	if err := s.listen(ctx); err != nil {
		return nil, err
	}
	f := &s.fwd
	answer := make(chan []byte, 1)
	f.mu.Lock()
	f.seq++
	corr := strconv.FormatUint(f.seq, 10)
	f.waiting[corr] = answer
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.waiting, corr)
		f.mu.Unlock()
	}()
	data := append([]byte(corr+"\n"), req...)
	if err := s.Publish(ctx, replicaTopic(replica), replication.Relay{Kind: replication.RelayForward, From: s.replica, Data: data}); err != nil {
		return nil, err
	}
	select {
	case a := <-answer:
		return a, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("redisstore: forward to replica %s: no answer: %w", replica, context.Cause(ctx))
	}
}

// HandleForwarded has handle answer the requests forwarded to this replica.
func (s *Store) HandleForwarded(handle func(ctx context.Context, req []byte) []byte) (func(), error) {
	f := &s.fwd
	if err := s.listen(context.Background()); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.handle = handle
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.handle = nil
		f.mu.Unlock()
	}, nil
}

// forwardRelay acts on a relay of the replica's channel.
func (s *Store) forwardRelay(r replication.Relay) {
	corr, body, ok := strings.Cut(string(r.Data), "\n")
	if !ok {
		return
	}
	f := &s.fwd
	switch r.Kind {
	case replication.RelayAnswer:
		f.mu.Lock()
		ch := f.waiting[corr]
		f.mu.Unlock()
		if ch != nil {
			select {
			case ch <- []byte(body):
			default:
			}
		}
	case replication.RelayForward:
		f.mu.Lock()
		handle := f.handle
		f.mu.Unlock()
		if handle == nil {
			return
		}
		from := r.From
		go func() { // may take a while: never on the delivery goroutine
			answer := handle(context.Background(), []byte(body))
			if answer == nil {
				return
			}
			data := append([]byte(corr+"\n"), answer...)
			_ = s.Publish(context.Background(), replicaTopic(from), replication.Relay{Kind: replication.RelayAnswer, From: s.replica, Data: data})
		}()
	}
}
