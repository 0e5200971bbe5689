// Package replication is the protocol between the replicas of one service
// that share Streamable HTTP sessions: the [Cluster] an Endpoint keeps its
// session records in and relays messages through, and the optional
// [Forwarder] and [Leases]. It has one implementation,
// internal/redisstore, which users reach through package redisshare, and
// an in-memory one for tests (internal/streamabletest).
package replication
