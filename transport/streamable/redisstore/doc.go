// Package redisstore keeps the shared sessions of Vigil's Streamable HTTP
// transport on Redis (github.com/redis/go-redis/v9), so that the replicas of
// a service behind a load balancer with no session affinity serve any
// request of any 2025-era session: a [Store] is one replica's
// [streamable.Cluster] (session records with an idle TTL, relays over
// pub/sub) and the [streamable.EventStore] of every replica (resumable
// streams on Redis streams, so that a GET with Last-Event-ID resumes on any
// replica).
//
// What each Redis failure means: while Redis cannot be reached, a replica
// answers requests of sessions it holds no view of with 503 and
// Retry-After, refuses new sessions with 503, and lets the requests in
// flight finish; once Redis answers again it serves them, without a
// restart.
package redisstore
