// Package redisstore keeps the shared sessions of Vigil's Streamable HTTP
// transport on Redis (github.com/redis/go-redis/v9), so that the replicas of
// a service behind a load balancer with no session affinity serve any
// request of any 2025-era session: a [Store] is one replica's
// [streamable.Cluster] (session records with an idle TTL, relays over
// pub/sub) and the [streamable.EventStore] of every replica (resumable
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
package redisstore
