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
// ([WithClusterKey]), the same on every replica. Every relay is sealed
// under it (AES-256-GCM, bound to its channel, with its kind, sender, data,
// a timestamp and a nonce inside), and a replica admits each relay once,
// within 30 seconds of its
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
// A Store's keys are all under the prefix and with the session's tag, the
// SHA-256 of its id in base64url, as a hash tag (so a Redis Cluster keeps
// a session's keys in one slot, and Redis never sees the id):
//
//   - {prefix}{tag}:s, a hash: the session's record (principal, state,
//     each sealed), expiring after the idle timeout unless touched (the
//     Endpoint's, handed over by [Store.SetSessionTimeouts]);
//   - {prefix}{tag}:e:{stream tag}, a stream: a resumable stream's events
//     (sealed), trimmed to MaxEvents and to the session's event bytes,
//     expiring with the session; the stream tag is the SHA-256 of the
//     stream's name, which holds the request id the client chose;
//   - {prefix}{tag}:es, a set: the session's stream tags, for Forget;
//   - {prefix}{tag}:claim:{name tag}, a string: who answered a request its
//     replica lost ([Store.Claim]);
//   - {prefix}{tag}:eb, a string: the size of the session's events, which
//     WithMaxSessionEventBytes bounds;
//   - the channel {prefix}{tag}:r carries the session's relays (sealed);
//     on a Redis Cluster it is a shard channel (SSUBSCRIBE, SPUBLISH),
//     served by its slot's primary, so that a relay's count is every
//     replica's, where PUBSUB NUMSUB counts one node's subscribers.
//
// Besides the sessions': {prefix}replica:{name}, each replica's lease, and
// {prefix}state:{digest}, a requestState used ([Store.UseRequestState]),
// named by a digest of the sealed state.
//
// The callers' keys of package redisshare (session quotas, rate limits) are
// named, and the session ids in them written, by [Store.Pseudonym].
package redisstore
