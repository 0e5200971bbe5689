package replication

import "time"

// Config is what streamable.WithCluster shares an Endpoint's 2025-era
// sessions through: a streamable.Cluster, by the Replica of the Cluster
// it embeds (a Cluster alone is one too, with the defaults below).
type Config struct {
	// Cluster keeps the session records and carries the relays.
	Cluster
	// ViewIdle is how long a replica keeps its view of a session after
	// its last request there (30 s when <= 0).
	ViewIdle time.Duration
	// OnRequestLost, when set, is called each time this replica answers
	// a request of a shared session that a gone replica was serving (see
	// [Leases]), with a "server instance lost" error on the client's
	// resumed stream: the count of requests a replica's death cost.
	OnRequestLost func()
	// OnRelayRefused, when set, is called with its reason each time this
	// replica refuses a relay of a shared session instead of acting on
	// it. The reason is "request": a [RelayClient] that is a request
	// rather than a response or a notification, which no replica sends (a
	// request runs only on the replica its client posted it to, with its
	// own principal); or "cancel": a [RelayCancel] that does not carry a
	// caller and a notifications/cancelled. It must be fast and safe for
	// concurrent use.
	OnRelayRefused func(reason string)
}
