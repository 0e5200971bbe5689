package redisstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/seal"
)

// Store keeps the shared sessions of a Streamable HTTP service on Redis:
// it is the [replication.Cluster] of one replica, and the event store
// every replica can resume from (package redisshare gives it to the
// endpoint as a streamable.EventStore). Give each replica its own Store on
// the same Redis (package redisshare does):
//
//	store, err := redisstore.New(ctx, client, redisstore.WithClusterKey(key, nil))
//	h := streamable.New(srv, streamable.WithCluster(store))
//
// Its keys are all under the prefix, with the SHA-256 of the session id as
// a hash tag, as the package doc lists. Its methods are safe for concurrent use.
type Store struct {
	rdb      redis.UniversalClient
	cfg      config
	replica  string
	pubsub   *redis.PubSub
	shards   *shards // on a Redis Cluster only: the count of the replicas (sharded.go)
	closed   chan struct{}
	loopDone chan struct{}

	fwd forwarding // forward.go

	keys   *seal.Keys   // the cluster key
	replay *seal.Replay // the relays' stamps received

	// The sessions' idle and init timeouts, as nanoseconds, which the
	// Endpoint hands over (SetSessionTimeouts); until then 0 (records live
	// replication.NeverIdleTTL) and replication.DefaultInitTimeout. idle
	// <= 0: sessions never idle out.
	idle, init atomic.Int64

	mu      sync.Mutex
	subs    map[string]map[*subscription]struct{} // by channel
	waiting map[string][]chan struct{}            // channel → Subscribes waiting for its confirmation
	active  map[string]bool                       // channels Redis confirmed
	got     map[string]uint8                      // channel → its subscriptions confirmed (gotClassic, gotSharded)
	need    uint8                                 // what a channel needs confirmed to be active
	pending map[string]bool                       // channels subscribed while Redis did not answer, not yet asked of it (SubscribePending)
}

var _ replication.Expiring = (*Store)(nil)

// New returns the Store of one replica on rdb, which it does not close.
// It needs the cluster key ([WithClusterKey]): without one, whoever can
// write to Redis could act in any session. It does not need Redis to
// answer yet: its commands fail until Redis does, and its subscriptions
// connect when Redis answers.
func New(ctx context.Context, rdb redis.UniversalClient, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if len(cfg.current) == 0 {
		return nil, errors.New("redisstore: no cluster key: every replica needs the same secret key of at least 32 random bytes (such as `openssl rand -base64 48`), given to WithClusterKey")
	}
	keys, err := seal.New(cfg.current, cfg.previous)
	if err != nil {
		return nil, fmt.Errorf("redisstore: cluster key: %w", err)
	}
	replica := cfg.replica
	if replica == "" {
		var b [6]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		replica = base64.RawURLEncoding.EncodeToString(b[:])
	}
	if strings.ContainsAny(replica, ".~ ") || !visible(replica) {
		return nil, fmt.Errorf("redisstore: replica name %q: want visible ASCII without '.', '~'", replica)
	}
	s := &Store{
		rdb: rdb, cfg: cfg, replica: replica, keys: keys, replay: seal.NewReplay(replayWindow, replayMemory),
		closed: make(chan struct{}), loopDone: make(chan struct{}),
		subs: make(map[string]map[*subscription]struct{}), waiting: make(map[string][]chan struct{}), active: make(map[string]bool),
		got: make(map[string]uint8), need: gotClassic, pending: make(map[string]bool),
	}
	s.init.Store(int64(replication.DefaultInitTimeout))
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		s.shards = newShards(cc, func(ch string) { s.confirmed(ch, gotSharded) }, cfg.logger)
		s.need = gotClassic | gotSharded
	}
	s.pubsub = rdb.Subscribe(context.WithoutCancel(ctx)) // no channel yet: one connection, subscribed to as views come
	go s.receive()
	return s, nil
}

// Close stops the Store's subscriptions. It does not close the client.
func (s *Store) Close() error {
	select {
	case <-s.closed:
		return nil
	default:
	}
	if s.fwd.cancel != nil {
		s.fwd.cancel()
	}
	close(s.closed)
	err := s.pubsub.Close()
	<-s.loopDone
	if s.shards != nil {
		err = errors.Join(err, s.shards.close())
	}
	return err
}

// Replica returns the replica's name.
func (s *Store) Replica() string { return s.replica }

func (s *Store) recordKey(id string) string     { return s.key(id, ":s", "") }
func (s *Store) channel(id string) string       { return s.key(id, ":r", "") }
func (s *Store) streamsKey(id string) string    { return s.key(id, ":es", "") }
func (s *Store) eventsKey(id, st string) string { return s.key(id, ":e:", streamTag(st)) }
func (s *Store) bytesKey(id string) string      { return s.key(id, ":eb", "") }

// SetSessionTimeouts takes the Endpoint's idle and init timeouts (see
// [replication.Expiring]): records live for idle after their last Touch
// ([replication.NeverIdleTTL] when idle <= 0), a new one for the shorter
// of init and that until its first (replication.DefaultInitTimeout until
// then). init <= 0 keeps the init timeout.
func (s *Store) SetSessionTimeouts(idle, init time.Duration) {
	s.idle.Store(int64(idle))
	if init > 0 {
		s.init.Store(int64(init))
	}
}

// IdleTimeout returns the sessions' idle timeout: the Endpoint's, once it
// handed it (SetSessionTimeouts); <= 0 when sessions never idle out.
func (s *Store) IdleTimeout() time.Duration { return time.Duration(s.idle.Load()) }

// ttl is how long a record and its events live after their last Touch.
func (s *Store) ttl() time.Duration {
	if d := s.IdleTimeout(); d > 0 {
		return d
	}
	return replication.NeverIdleTTL
}

// initTTL is how long a new record lives until its first Touch.
func (s *Store) initTTL() time.Duration { return min(time.Duration(s.init.Load()), s.ttl()) }

// key returns the key (or channel) of session id: the prefix, the id's
// tag as the hash tag, then suffix and name. Redis never sees the id.
func (s *Store) key(id, suffix, name string) string {
	var buf [128]byte
	b := append(buf[:0], s.cfg.prefix...)
	b = append(b, '{')
	b = appendTag(b, id)
	b = append(b, '}')
	b = append(b, suffix...)
	return string(append(b, name...))
}

// observe reports an operation that started at start and failed with
// *err (deferred: err is the operation's named result).
func (s *Store) observe(op string, start time.Time, err *error) {
	if s.cfg.observer != nil {
		s.cfg.observer(op, time.Since(start), *err)
	}
}

// Create stores a new session's record; it fails if the id is taken.
func (s *Store) Create(ctx context.Context, id string, rec replication.SessionRecord) (err error) {
	defer s.observe("create", time.Now(), &err)
	key := s.recordKey(id)
	var created *redis.BoolCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		created = p.HSetNX(ctx, key, "p", s.sealField(id, "p", []byte(rec.Principal)))
		if rec.State != nil {
			p.HSet(ctx, key, "st", s.sealField(id, "st", rec.State))
		}
		p.PExpire(ctx, key, s.initTTL()) // until the client initialized (Touch)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: create session: %w", err)
	}
	if !created.Val() {
		return fmt.Errorf("redisstore: create session: the id is taken")
	}
	return nil
}

// Load returns a session's record, or an error wrapping
// replication.ErrUnknownSession, also for a record whose fields fail to
// open under the cluster key (forged, altered, or another session's).
func (s *Store) Load(ctx context.Context, id string) (rec replication.SessionRecord, err error) {
	defer s.observe("load", time.Now(), &err)
	m, err := s.rdb.HGetAll(ctx, s.recordKey(id)).Result()
	if err != nil {
		return rec, fmt.Errorf("redisstore: load session: %w", err)
	}
	sealed, ok := m["p"]
	if !ok {
		return rec, fmt.Errorf("redisstore: session: %w", replication.ErrUnknownSession)
	}
	p, err := s.openField(id, "p", sealed)
	if err != nil {
		s.refuse(RefusedRecord, s.recordKey(id))
		return rec, fmt.Errorf("redisstore: session record refused: %w", replication.ErrUnknownSession)
	}
	rec.Principal = string(p)
	if sealed, ok := m["st"]; ok {
		if rec.State, err = s.openField(id, "st", sealed); err != nil {
			s.refuse(RefusedRecord, s.recordKey(id))
			return replication.SessionRecord{}, fmt.Errorf("redisstore: session record refused: %w", replication.ErrUnknownSession)
		}
	}
	return rec, nil
}

// storeState sets the state of an existing record (never recreating a
// deleted one) and publishes the relay, in one round trip; it returns 0
// for no record, else 1 + the replicas the relay reached. It does not
// renew the record: Touch does, so that a session whose client never
// initialized expires after the init timeout.
//
// The replicas a relay reached are the clients subscribed to its channel
// by name (PUBSUB NUMSUB, in the same script, or for Delete the same
// transaction, as the PUBLISH, so both see the same subscribers): each
// Store subscribes to a session's channel by name on its one connection.
// Not PUBLISH's own count: it adds every pattern subscriber (a redis-cli
// or a monitoring tool's PSUBSCRIBE), which never acknowledges a state,
// so each state change would wait out its acknowledgement. NUMSUB is one
// lookup in the table PUBLISH uses, in the same round trip.
var storeState = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'st', ARGV[1])
redis.call('PUBLISH', KEYS[2], ARGV[2])
return 1 + redis.call('PUBSUB', 'NUMSUB', KEYS[2])[2]`)

// storeStateCluster is storeState on a Redis Cluster: the relay is a
// classic PUBLISH, which the Cluster carries to every node, so that each
// replica gets it wherever its subscription is, a slot migrating or not;
// the replicas it reached are those subscribed to the channel sharded on
// the slot's primary (PUBSUB SHARDNUMSUB: each Store subscribes there to
// be counted, sharded.go), where PUBSUB NUMSUB counts one node's. The
// channel is ARGV[3]: a classic channel is no key, and declared as one it
// would make the script TRYAGAIN throughout a migration of its slot.
var storeStateCluster = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'st', ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[2])
return 1 + redis.call('PUBSUB', 'SHARDNUMSUB', ARGV[3])[2]`)

// deleteCluster is Delete's write on a Redis Cluster (see
// storeStateCluster): it deletes the record, publishes the end (ARGV[2])
// on the channel (ARGV[1]), and returns the replicas it reached.
var deleteCluster = redis.NewScript(`
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return redis.call('PUBSUB', 'SHARDNUMSUB', ARGV[1])[2]`)

// StoreState replaces a session's state, publishes it to the session's
// replicas, and returns how many other replicas it reached: the Stores
// subscribed to the session's channel, this one excluded.
func (s *Store) StoreState(ctx context.Context, id string, state []byte) (others int, err error) {
	defer s.observe("store_state", time.Now(), &err)
	ch := s.channel(id)
	relay := s.stamp(ch, encodeRelay(replication.Relay{Kind: replication.RelayState, From: s.replica, Data: state}))
	var n int
	if s.shards != nil {
		n, err = s.runAcked(ctx, storeStateCluster, []string{s.recordKey(id)}, s.sealField(id, "st", state), relay, ch).Int()
	} else {
		n, err = s.runAcked(ctx, storeState, []string{s.recordKey(id), ch}, s.sealField(id, "st", state), relay).Int()
	}
	if err != nil {
		return 0, fmt.Errorf("redisstore: store state: %w", err)
	}
	if n == 0 {
		return 0, fmt.Errorf("redisstore: store state: %w", replication.ErrUnknownSession)
	}
	if s.cfg.relayed != nil {
		s.cfg.relayed(replication.RelayState)
	}
	return s.othersOf(id, n-1), nil
}

// othersOf returns how many of the replicas a relay of the session id
// reached are not this one: reached counts this one when it follows the
// session.
func (s *Store) othersOf(id string, reached int) int {
	s.mu.Lock()
	if s.active[s.channel(id)] {
		reached--
	}
	s.mu.Unlock()
	return max(reached, 0)
}

// Touch restarts a session's idle clock.
func (s *Store) Touch(ctx context.Context, id string) (err error) {
	defer s.observe("touch", time.Now(), &err)
	var ok bool
	if s.cfg.acks == 0 {
		ok, err = s.rdb.PExpire(ctx, s.recordKey(id), s.ttl()).Result()
	} else {
		var touched *redis.BoolCmd
		var wait *redis.Cmd
		start := time.Now()
		_, _ = s.ackedOn(ctx, s.recordKey(id)).Pipelined(ctx, func(p redis.Pipeliner) error { // each command's error is its own
			touched, wait = p.PExpire(ctx, s.recordKey(id), s.ttl()), s.waitCmd(ctx, p)
			return nil
		})
		if moved(touched.Err()) { // see runAcked
			touched, wait = s.rdb.PExpire(ctx, s.recordKey(id), s.ttl()), nil
		}
		s.noteAcks(wait, start)
		ok, err = touched.Result()
	}
	if err != nil {
		return fmt.Errorf("redisstore: touch session: %w", err)
	}
	if !ok {
		return fmt.Errorf("redisstore: touch session: %w", replication.ErrUnknownSession)
	}
	return nil
}

// Delete removes a session's record and events, publishes its end, and
// returns how many other replicas it reached (see StoreState).
func (s *Store) Delete(ctx context.Context, id string) (others int, err error) {
	defer s.observe("delete", time.Now(), &err)
	if err := s.Forget(ctx, id); err != nil {
		return 0, err
	}
	ch := s.channel(id)
	end := s.stamp(ch, encodeRelay(replication.Relay{Kind: replication.RelayEnd, From: s.replica}))
	var reached int
	if s.shards != nil {
		reached, err = deleteCluster.Run(ctx, s.rdb, []string{s.recordKey(id)}, ch, end).Int()
	} else {
		var numsub *redis.MapStringIntCmd
		_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, s.recordKey(id))
			p.Publish(ctx, ch, end)
			numsub = p.PubSubNumSub(ctx, ch) // the replicas, not PUBLISH's count (see storeState)
			return nil
		})
		reached = int(numsub.Val()[ch])
	}
	if err != nil {
		return 0, fmt.Errorf("redisstore: delete session: %w", err)
	}
	if s.cfg.relayed != nil {
		s.cfg.relayed(replication.RelayEnd)
	}
	return s.othersOf(id, reached), nil
}

// Publish sends r to the session's replicas.
func (s *Store) Publish(ctx context.Context, id string, r replication.Relay) (err error) {
	defer s.observe("publish", time.Now(), &err)
	ch := s.channel(id)
	if err := s.rdb.Publish(ctx, ch, s.stamp(ch, encodeRelay(r))).Err(); err != nil {
		return fmt.Errorf("redisstore: publish: %w", err)
	}
	if s.cfg.relayed != nil {
		s.cfg.relayed(r.Kind)
	}
	return nil
}

// encodeRelay is a relay before its stamp: its kind's byte, the sender, a
// newline, the data.
func encodeRelay(r replication.Relay) []byte {
	b := make([]byte, 0, 2+len(r.From)+len(r.Data))
	b = append(b, byte('0'+r.Kind))
	b = append(b, r.From...)
	b = append(b, '\n')
	return append(b, r.Data...)
}

func decodeRelay(payload []byte) (replication.Relay, bool) {
	if len(payload) < 2 {
		return replication.Relay{}, false
	}
	head, data, ok := bytes.Cut(payload[1:], []byte("\n"))
	if !ok {
		return replication.Relay{}, false
	}
	return replication.Relay{Kind: replication.RelayKind(payload[0] - '0'), From: string(head), Data: data}, true
}

// Errors the store wraps.
var errClosed = errors.New("redisstore: the store is closed")

func visible(s string) bool {
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7E {
			return false
		}
	}
	return s != ""
}
