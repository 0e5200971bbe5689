package redisstore

import (
	"log/slog"
	"time"

	"github.com/vigil-mcp/vigil/internal/replication"
)

// Option configures a [Store]; a nil Option is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix    string
	replica   string
	maxEvents int64
	maxBytes  int64 // events kept per session, in bytes
	logger    *slog.Logger
	observer  func(op string, d time.Duration, err error)
	relayed   func(kind replication.RelayKind)
	current   []byte // the cluster key
	previous  []byte // the cluster key before a rotation, or nil
	refused   func(reason string)
	// acks: replicas a write the client is answered after waits for
	// (WithReplicaAcks), at most ackTimeout.
	acks       int
	ackTimeout time.Duration
	// answering reports whether Redis answers (WithAnswering); nil: it
	// is taken to.
	answering func() bool
}

func defaultConfig() config {
	return config{
		prefix: "vigil:", maxEvents: 1000,
		maxBytes: DefaultMaxSessionEventBytes, logger: slog.New(slog.DiscardHandler),
	}
}

// WithPrefix puts every key and channel under prefix ("vigil:" by default),
// so that several services can share one Redis.
func WithPrefix(prefix string) Option {
	return optionFunc(func(c *config) { c.prefix = prefix })
}

// WithReplica names the replica (random by default): visible ASCII without
// '.' or '~', unique among the replicas.
func WithReplica(name string) Option {
	return optionFunc(func(c *config) { c.replica = name })
}

// WithMaxEvents bounds each resumable stream to about n events (1000 by
// default); older ones are trimmed.
func WithMaxEvents(n int64) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxEvents = n
		}
	})
}

// WithLogger sets the logger of the Store's own messages.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l })
}

// WithObserver has observe called after every Redis operation with its
// name (create, load, store_state, touch, delete, publish, subscribe,
// append, replay, forget, lease, alive, claim), its duration and its
// error, for metrics.
func WithObserver(observe func(op string, d time.Duration, err error)) Option {
	return optionFunc(func(c *config) { c.observer = observe })
}

// WithRelayCounter has count called for every relay the Store publishes.
func WithRelayCounter(count func(kind replication.RelayKind)) Option {
	return optionFunc(func(c *config) { c.relayed = count })
}

// DefaultMaxSessionEventBytes is the size of the events kept for one
// session by default (see [WithMaxSessionEventBytes]).
const DefaultMaxSessionEventBytes = 1 << 20

// EventOverhead is the size counted for a stored event besides its data.
const EventOverhead = 64

// WithMaxSessionEventBytes bounds the events kept for one session, over
// all its streams, to n bytes ([DefaultMaxSessionEventBytes] by default),
// each event counted as its data plus [EventOverhead], and each stream as
// 4,800 bytes plus twice its key's name, near what Redis allocates for one
// with its first entry: beyond it the oldest
// events of the stream appended to go first (its newest is always kept),
// then those of the session's other streams, whose emptied keys go. A
// resumption replays what is left of its stream (as
// streamable.EventStore allows: its newest event, the response once
// there is one, is the last to go) and a stream with nothing left is
// unknown. An event larger than n alone is not stored (its stream goes on
// without ids).
func WithMaxSessionEventBytes(n int64) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxBytes = n
		}
	})
}

// WithClusterKey sets the cluster key, which [New] requires: random bytes
// (at least 32, such as `openssl rand -base64 48`) shared by every replica
// and by no one else. Every relay is sealed with it (AES-256-GCM, bound to
// its channel, with its kind, sender, data, a timestamp and a nonce inside)
// and every session record and stored event sealed (bound to the session
// id and field or stream), so that a Redis writer can drop or delay what
// Redis holds but neither forge, alter, move, replay nor read it; what
// Redis sees of a caller is its [Store.Pseudonym] under it. During a
// rotation give the new key as current and the old one as previous on
// every replica, then, once all have it, the new one alone.
func WithClusterKey(current, previous []byte) Option {
	return optionFunc(func(c *config) { c.current, c.previous = current, previous })
}

// The reasons [WithRefusalCounter] counts.
const (
	RefusedUnsigned = "unsigned" // a relay that does not open: forged, altered, malformed, another key's
	RefusedStale    = "stale"    // a relay stamped too far from now (30 seconds), either way
	RefusedReplayed = "replayed" // a relay already received
	RefusedRecord   = "record"   // a session record that fails to open: the session is unknown
	RefusedEvent    = "event"    // a stored event that fails to open: it is not replayed
)

// WithRefusalCounter has count called with the reason of everything the
// Store refuses from Redis (the Refused* constants). The Store logs them at
// Debug at most, so that a flood does not flood the logs.
func WithRefusalCounter(count func(reason string)) Option {
	return optionFunc(func(c *config) { c.refused = count })
}

// WithAnswering has the Store ask answering whether Redis answers now (a
// replica's lease renewals tell): a Subscribe while it does not returns
// at once, its subscription asked of Redis by [Store.SubscribePending]
// once Redis answers, rather than waiting on a Redis that is away.
func WithAnswering(answering func() bool) Option {
	return optionFunc(func(c *config) { c.answering = answering })
}
