package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/seal"
)

// subscribeWait bounds how long Subscribe waits for Redis to confirm a
// subscription.
const subscribeWait = 5 * time.Second

// Subscribe calls deliver with the session's relays until cancel is
// called: one connection carries every subscription of the Store, and
// each subscription's relays are delivered in order, on a goroutine that
// runs only while it has relays to deliver. It returns once Redis
// confirmed the subscription, or, while Redis does not answer
// ([WithAnswering]), at once: the subscription stands, and
// [Store.SubscribePending] asks Redis for it when Redis answers.
func (s *Store) Subscribe(ctx context.Context, id string, deliver func(replication.Relay)) (cancel func(), err error) {
	defer s.observe("subscribe", time.Now(), &err)
	ch := s.channel(id)
	sub := &subscription{deliver: deliver}
	wait := make(chan struct{})
	away := s.cfg.answering != nil && !s.cfg.answering()
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return nil, errClosed
	default:
	}
	first := len(s.subs[ch]) == 0
	if s.subs[ch] == nil {
		s.subs[ch] = make(map[*subscription]struct{})
	}
	s.subs[ch][sub] = struct{}{}
	active := s.active[ch]
	switch {
	case !active && away:
		if first {
			s.pending[ch] = true
		}
	case !active:
		s.waiting[ch] = append(s.waiting[ch], wait)
	}
	s.mu.Unlock()
	cancel = func() { s.unsubscribe(ch, sub) }
	if active || away {
		return cancel, nil
	}
	if first {
		if err := s.subscribeChannel(ctx, ch); err != nil {
			cancel()
			return nil, fmt.Errorf("redisstore: subscribe: %w", err)
		}
	}
	timer := time.NewTimer(subscribeWait)
	defer timer.Stop()
	select {
	case <-wait:
		return cancel, nil
	case <-ctx.Done():
		cancel()
		return nil, fmt.Errorf("redisstore: subscribe: %w", context.Cause(ctx))
	case <-timer.C:
		cancel()
		return nil, fmt.Errorf("redisstore: subscribe: Redis did not confirm within %v", subscribeWait)
	case <-s.closed:
		cancel()
		return nil, errClosed
	}
}

// unsubscribe ends sub; the channel's last one unsubscribes from Redis.
func (s *Store) unsubscribe(ch string, sub *subscription) {
	s.mu.Lock()
	if _, ok := s.subs[ch][sub]; !ok {
		s.mu.Unlock()
		return
	}
	delete(s.subs[ch], sub)
	last := len(s.subs[ch]) == 0
	if last {
		delete(s.subs, ch)
		delete(s.active, ch)
		delete(s.got, ch)
		delete(s.waiting, ch)
		delete(s.pending, ch)
	}
	sub.stop()
	s.mu.Unlock()
	if last {
		// Under no lock of ours: the receive loop may be the caller.
		_ = s.pubsub.Unsubscribe(context.Background(), ch)
		if s.shards != nil {
			s.shards.unsubscribe(ch)
		}
	}
}

// SubscribePending asks Redis for the subscriptions made while it did not
// answer ([WithAnswering]); those it could not ask for stay pending, for
// the next call. Call it whenever Redis answers: it does nothing when
// none is pending.
func (s *Store) SubscribePending(ctx context.Context) error {
	s.mu.Lock()
	var chans []string
	for ch := range s.pending {
		chans = append(chans, ch)
	}
	s.mu.Unlock()
	var errs []error
	for _, ch := range chans {
		if err := s.subscribeChannel(ctx, ch); err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		delete(s.pending, ch)
		gone := len(s.subs[ch]) == 0 // cancelled meanwhile
		s.mu.Unlock()
		if gone {
			_ = s.pubsub.Unsubscribe(ctx, ch)
			if s.shards != nil {
				s.shards.unsubscribe(ch)
			}
		}
	}
	return errors.Join(errs...)
}

// subscribeChannel asks Redis for ch on the Store's one connection, and on
// a Redis Cluster also sharded on its slot's primary, to be counted
// (sharded.go).
func (s *Store) subscribeChannel(ctx context.Context, ch string) error {
	if err := s.pubsub.Subscribe(ctx, ch); err != nil {
		return err
	}
	if s.shards != nil {
		return s.shards.subscribe(ctx, ch)
	}
	return nil
}

// receive reads the Store's connection: subscription confirmations, and
// relays to dispatch. go-redis reconnects and subscribes again after a
// connection error.
func (s *Store) receive() {
	defer close(s.loopDone)
	ctx := context.Background()
	for {
		msg, err := s.pubsub.Receive(ctx)
		select {
		case <-s.closed:
			return
		default:
		}
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			select {
			case <-s.closed:
				return
			case <-time.After(100 * time.Millisecond): // Redis is away: do not spin
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				s.confirmed(m.Channel, gotClassic)
			}
		case *redis.Message:
			s.dispatch(m.Channel, m.Payload)
		}
	}
}

// What of a channel's subscriptions Redis confirmed: the classic one,
// which carries the relays, and on a Redis Cluster the sharded one, which
// counts the replica (sharded.go).
const (
	gotClassic uint8 = 1 << iota
	gotSharded
)

// confirmed notes that Redis confirmed a subscription (got) of ch, and
// once it confirmed all the Store needs, marks ch subscribed and releases
// the Subscribes waiting for it.
func (s *Store) confirmed(ch string, got uint8) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.subs[ch]) == 0 {
		return // unsubscribed meanwhile
	}
	s.got[ch] |= got
	if s.got[ch]&s.need != s.need {
		return
	}
	s.active[ch] = true
	for _, w := range s.waiting[ch] {
		close(w)
	}
	delete(s.waiting, ch)
}

// dispatch queues a relay for every subscription of ch, once it is opened
// and its stamp checked: sealed for ch under the cluster key, fresh, and
// new.
func (s *Store) dispatch(ch, payload string) {
	body, st, err := s.keys.Unstamp([]byte(payload), ad(domainRelay, ch))
	if err != nil {
		s.refuse(RefusedUnsigned, ch)
		return
	}
	if err := s.replay.Admit(time.Now(), st); err != nil {
		reason := RefusedReplayed
		if errors.Is(err, seal.ErrStale) {
			reason = RefusedStale
		}
		s.refuse(reason, ch)
		return
	}
	r, ok := decodeRelay(body)
	if !ok {
		s.refuse(RefusedUnsigned, ch)
		return
	}
	s.mu.Lock()
	for sub := range s.subs[ch] {
		sub.queue(r)
	}
	s.mu.Unlock()
}

// subscription delivers its relays in order, on a goroutine that runs
// while some are queued.
type subscription struct {
	deliver func(replication.Relay)

	mu      sync.Mutex
	pending []replication.Relay
	running bool
	stopped bool
}

func (sub *subscription) queue(r replication.Relay) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.stopped {
		return
	}
	sub.pending = append(sub.pending, r)
	if !sub.running {
		sub.running = true
		go sub.drain()
	}
}

func (sub *subscription) drain() {
	for {
		sub.mu.Lock()
		if len(sub.pending) == 0 || sub.stopped {
			sub.running = false
			sub.pending = nil
			sub.mu.Unlock()
			return
		}
		r := sub.pending[0]
		sub.pending = sub.pending[1:]
		sub.mu.Unlock()
		sub.deliver(r)
	}
}

func (sub *subscription) stop() {
	sub.mu.Lock()
	sub.stopped = true
	sub.mu.Unlock()
}
