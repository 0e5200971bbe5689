package streamabletest

import (
	"context"
	"fmt"
	"sync"

	"github.com/vigil-mcp/vigil/internal/replication"
)

// Cluster is an in-memory [replication.Cluster] shared by several Endpoints
// of one process, for tests of the shared mode: each Endpoint gets the
// view of one replica ([Cluster.Replica]). Relays are delivered in order,
// on one goroutine per subscription, as Redis's pub/sub delivers them. A
// production cluster spans processes: see package internal/redisstore.
type Cluster struct {
	mu       sync.Mutex
	records  map[string]replication.SessionRecord
	subs     map[string]map[*subscription]struct{} // by session
	down     bool
	loads    int
	relayed  map[replication.RelayKind]int
	replicas map[string]bool
	handlers map[string]func(ctx context.Context, req []byte) []byte // HandleForwarded's, by replica
	held     map[string]*hold                                        // HoldRelays', by replica
}

// hold keeps the relays for one replica's subscriptions until released.
type hold struct {
	seen   chan replication.Relay
	queued []heldRelay
}

type heldRelay struct {
	sub *subscription
	rel replication.Relay
}

// NewCluster returns an empty cluster.
func NewCluster() *Cluster {
	return &Cluster{
		records:  make(map[string]replication.SessionRecord),
		subs:     make(map[string]map[*subscription]struct{}),
		relayed:  make(map[replication.RelayKind]int),
		replicas: make(map[string]bool),
		handlers: make(map[string]func(context.Context, []byte) []byte),
		held:     make(map[string]*hold),
	}
}

// HoldRelays keeps the relays published for replica's subscriptions from
// it, as a slow network or a stalled process would, until release is
// called, which delivers them in order. Each relay held is also sent to
// held, while it has room (16).
func (c *Cluster) HoldRelays(replica string) (held <-chan replication.Relay, release func()) {
	h := &hold{seen: make(chan replication.Relay, 16)}
	c.mu.Lock()
	c.held[replica] = h
	c.mu.Unlock()
	var once sync.Once
	return h.seen, func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(c.held, replica)
			for _, q := range h.queued {
				q.sub.queue(q.rel)
			}
		})
	}
}

// Replica returns the cluster as the replica name sees it.
func (c *Cluster) Replica(name string) replication.Cluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replicas[name] = true
	return &replica{c: c, name: name}
}

// SetDown makes every operation fail (down) or work again, as a store
// that went away and came back.
func (c *Cluster) SetDown(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
}

// Sessions returns how many session records the cluster holds.
func (c *Cluster) Sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.records)
}

// Loads returns how many times a replica loaded a record.
func (c *Cluster) Loads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// Relayed returns how many relays of kind were published.
func (c *Cluster) Relayed(kind replication.RelayKind) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relayed[kind]
}

var errDown = fmt.Errorf("streamabletest: the cluster is down")

type replica struct {
	c    *Cluster
	name string
}

var _ replication.Forwarder = (*replica)(nil)

// Forward calls the handler replica registered with HandleForwarded, on
// this goroutine, with a context that ends with ctx; it fails when there is none (the replica is gone) or the
// cluster is down.
func (r *replica) Forward(ctx context.Context, to string, req []byte) ([]byte, error) {
	r.c.mu.Lock()
	handle, down := r.c.handlers[to], r.c.down
	r.c.relayed[replication.RelayForward]++
	r.c.mu.Unlock()
	switch {
	case down:
		return nil, errDown
	case handle == nil:
		return nil, fmt.Errorf("streamabletest: forward to replica %s: no answer", to)
	}
	// As over a network: the handler gets none of ctx's values (the
	// caller's principal, its listener's address), only its end.
	hctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	return handle(hctx, req), nil
}

// HandleForwarded registers handle as the replica's, until stop.
func (r *replica) HandleForwarded(handle func(ctx context.Context, req []byte) []byte) (func(), error) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	r.c.handlers[r.name] = handle
	return func() {
		r.c.mu.Lock()
		defer r.c.mu.Unlock()
		delete(r.c.handlers, r.name)
	}, nil
}

func (r *replica) Replica() string { return r.name }

func (r *replica) Create(_ context.Context, id string, rec replication.SessionRecord) error {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return errDown
	}
	if _, ok := c.records[id]; ok {
		return fmt.Errorf("streamabletest: session %q exists", id)
	}
	c.records[id] = rec
	return nil
}

func (r *replica) Load(_ context.Context, id string) (replication.SessionRecord, error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return replication.SessionRecord{}, errDown
	}
	c.loads++
	rec, ok := c.records[id]
	if !ok {
		return rec, fmt.Errorf("streamabletest: session %q: %w", id, replication.ErrUnknownSession)
	}
	rec.State = append([]byte(nil), rec.State...)
	if len(rec.State) == 0 {
		rec.State = nil
	}
	return rec, nil
}

func (r *replica) StoreState(_ context.Context, id string, state []byte) (int, error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return 0, errDown
	}
	rec, ok := c.records[id]
	if !ok {
		return 0, fmt.Errorf("streamabletest: session %q: %w", id, replication.ErrUnknownSession)
	}
	rec.State = append([]byte(nil), state...)
	c.records[id] = rec
	others := r.othersLocked(id)
	r.publishLocked(id, replication.Relay{Kind: replication.RelayState, From: r.name, Data: state})
	return others, nil
}

// othersLocked returns how many replicas other than r follow the session
// id; under c.mu.
func (r *replica) othersLocked(id string) int {
	others := make(map[string]bool)
	for sub := range r.c.subs[id] {
		if sub.replica != r.name {
			others[sub.replica] = true
		}
	}
	return len(others)
}

func (r *replica) Touch(_ context.Context, id string) error {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return errDown
	}
	if _, ok := c.records[id]; !ok {
		return fmt.Errorf("streamabletest: session %q: %w", id, replication.ErrUnknownSession)
	}
	return nil
}

func (r *replica) Delete(_ context.Context, id string) (int, error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return 0, errDown
	}
	delete(c.records, id)
	others := r.othersLocked(id)
	r.publishLocked(id, replication.Relay{Kind: replication.RelayEnd, From: r.name})
	return others, nil
}

func (r *replica) Publish(_ context.Context, id string, rel replication.Relay) error {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return errDown
	}
	r.publishLocked(id, rel)
	return nil
}

// publishLocked queues rel for the session's subscriptions, or holds it
// for those of a replica whose relays are held (HoldRelays); under c.mu.
func (r *replica) publishLocked(id string, rel replication.Relay) {
	c := r.c
	c.relayed[rel.Kind]++
	rel.Data = append([]byte(nil), rel.Data...)
	for sub := range c.subs[id] {
		if h := c.held[sub.replica]; h != nil {
			h.queued = append(h.queued, heldRelay{sub, rel})
			select {
			case h.seen <- rel:
			default:
			}
			continue
		}
		sub.queue(rel)
	}
}

func (r *replica) Subscribe(_ context.Context, id string, deliver func(replication.Relay)) (func(), error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return nil, errDown
	}
	sub := &subscription{replica: r.name, deliver: deliver, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	if c.subs[id] == nil {
		c.subs[id] = make(map[*subscription]struct{})
	}
	c.subs[id][sub] = struct{}{}
	go sub.run()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.subs[id], sub)
			if len(c.subs[id]) == 0 {
				delete(c.subs, id)
			}
			c.mu.Unlock()
			close(sub.stop) // not waited for: cancel may be called from deliver
		})
	}, nil
}

// subscription delivers its relays in order on a goroutine of its own.
type subscription struct {
	replica string
	deliver func(replication.Relay)
	mu      sync.Mutex
	pending []replication.Relay
	wake    chan struct{}
	stop    chan struct{}
}

func (s *subscription) queue(r replication.Relay) {
	s.mu.Lock()
	s.pending = append(s.pending, r)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscription) run() {
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		batch := s.pending
		s.pending = nil
		s.mu.Unlock()
		for _, r := range batch {
			select {
			case <-s.stop:
				return
			default:
			}
			s.deliver(r)
		}
	}
}
