// Package redisshare wires the shared mode of Vigil's services (cmd/vigil
// and cmd/vigil-everything, flag -redis): a Redis client from a URL, the
// replica's redisstore.Store as the Streamable HTTP endpoint's cluster and
// event store, the replica's lease in Redis, which doubles as its health
// check, and the metrics of all of it.
package redisshare
