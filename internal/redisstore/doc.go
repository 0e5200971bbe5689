// Package redisstore keeps the shared sessions of Vigil's Streamable HTTP
// transport on Redis (github.com/redis/go-redis/v9), so that the replicas of
// a service behind a load balancer with no session affinity serve any
// request of any 2025-era session: a [Store] is one replica's
// [replication.Cluster] (session records with an idle TTL, relays over
// pub/sub) and the streamable.EventStore of every replica (resumable
// streams on Redis streams, so that a GET with Last-Event-ID resumes on any
// replica).
//
// Redis is not trusted with the sessions: a Store needs the cluster key
// ([WithClusterKey]), the same on every replica. Every relay carries an
// HMAC under it (over its channel, kind, sender, data, a timestamp and a
// nonce), and a replica admits each relay once, within 30 seconds of its
// clock either way, remembering the nonces of that window (at most 2^20,
// each a map entry, past which the oldest are forgotten and relays as old
// refused); session records and stored events are sealed (AES-256-GCM)
// bound to their session and field or stream. What fails is refused and
// counted ([WithRefusalCounter]). Redis can still drop, delay or expire
// what it holds; it cannot forge, replay, move or read it.
//
// What each Redis failure means: while Redis cannot be reached, a replica
// answers requests of sessions it holds no view of with 503 and
// Retry-After, refuses new sessions with 503, and lets the requests in
// flight finish; once Redis answers again it serves them, without a
// restart.
//
// A service wires its replicas with package redisshare (what vigil -redis
// does): it opens the Store with the replica's lease, gives it to the
// endpoint and to the server (server.WithFanout, server.WithTaskIDPrefix),
// and counts what it does in metrics. The Store alone is the part the
// endpoint sees.
//
// # Keys
//
// A Store's keys are all under the prefix and with the session id as a
// hash tag (so a Redis Cluster keeps a session's keys in one slot):
//
//   - {prefix}{id}:s, a hash: the session's record (principal, state,
//     each sealed), expiring after the idle timeout unless touched;
//   - {prefix}{id}:e:{stream}, a stream: a resumable stream's events (sealed),
//     trimmed to MaxEvents and to the session's event bytes, expiring
//     with the session;
//   - {prefix}{id}:es, a set: the session's stream keys, for Forget;
//   - {prefix}{id}:eb, a string: the size of the session's events, which
//     WithMaxSessionEventBytes bounds;
//   - the channel {prefix}{id}:r carries the session's relays (stamped).
package redisstore
