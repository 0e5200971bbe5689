// Package replication is the protocol between the replicas of one service
// that share Streamable HTTP sessions: the [Cluster] an Endpoint keeps its
// session records in and relays messages through, the optional
// [Forwarder] and [Leases], and the [SessionCounter] of a per-caller
// session quota counted across replicas. It has one implementation,
// internal/redisstore, which users reach through package redisshare, and
// an in-memory one for tests (internal/streamabletest).
package replication
