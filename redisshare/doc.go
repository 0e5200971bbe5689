// Package redisshare is how a service built on Vigil shares its sessions
// among replicas on Redis, the shared mode of cmd/vigil and
// cmd/vigil-everything (flag -redis): behind a load balancer with no
// session affinity, any replica serves any request of any 2025-era
// session and resumes any stream. [Open] connects to Redis (TLS with an
// ACL user; plain text only to loopback unless allowed), opens the
// replica's store of sessions, streams and tasks under the cluster key,
// takes the replica's lease in Redis, which doubles as its readiness
// check, and registers the metrics of all of it.
//
// The wiring, in this order (see [Example]):
//
//   - [Open] before the server, and [Shared.Close] after it;
//   - [Shared.ServerOptions] to server.New: task ids that name the
//     replica, and list changes and resource updates broadcast to the
//     others;
//   - [Shared.Options] to streamable.New: the cluster and the event store;
//   - [Shared.Ready] as the replica's readiness (503 while Redis does not
//     answer), and Endpoint.Drain when the replica stops, so that the
//     others take its sessions over;
//   - for limits over every replica rather than per replica,
//     [Shared.SessionQuota] as streamable.Quotas' SessionCounter, and
//     middleware.WithSharedRateLimits(shared) for rate limits
//     ([Shared.Allow]);
//   - for a gateway that keeps each user's upstream tokens,
//     [Shared.AccountStore] as the Store of package gateway/accounts' vault.
//
// What a replica does when Redis fails, and what Redis can and cannot do
// to the sessions: deploy/SCALING.md has the guarantees and the failure
// modes.
package redisshare
