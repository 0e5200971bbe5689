package replication

import "context"

// Cluster lets the Endpoints of several processes, the replicas of one
// service behind a load balancer with no session affinity, serve the same
// 2025-era sessions: any replica answers any POST, GET or DELETE of any
// session. An Endpoint takes one with streamable.WithCluster; package
// internal/redisstore has one on Redis, which redisshare wires. Without a
// Cluster, an Endpoint keeps its sessions in memory, and only it can
// serve them. A Cluster keeps a record of each session, which
// the replicas load when a session they do not hold comes to them, and
// carries [Relay] messages between the replicas that hold a session at the
// moment (a client's answer to a server request made on another replica,
// a cancellation, a message for the standalone GET stream, a changed
// state, the end of the session); a replica holds a session only while the
// session is busy there. Implementations must be safe for concurrent use.
type Cluster interface {
	// Replica names this process among the replicas: visible ASCII with
	// no '.', unique among them.
	Replica() string
	// Create stores the record of a new session. It fails if the id is
	// taken.
	Create(ctx context.Context, id string, rec SessionRecord) error
	// Load returns a session's record. It returns an error wrapping
	// streamable.ErrUnknownSession when there is none (never created,
	// deleted or expired), and another error when it cannot tell.
	Load(ctx context.Context, id string) (SessionRecord, error)
	// StoreState replaces the state of a session's record, publishes a
	// RelayState of it to the session's replicas, and returns how many
	// replicas other than this one were subscribed to the session then.
	// Each of them answers with a RelayStateSeen once it applied the state.
	StoreState(ctx context.Context, id string, state []byte) (others int, err error)
	// Touch restarts the idle clock of a session's record: a record that
	// is not touched for the idle timeout expires.
	Touch(ctx context.Context, id string) error
	// Delete removes a session's record, publishes a RelayEnd to the
	// session's replicas, and returns how many replicas other than this
	// one were subscribed to the session then. Each of them answers with a
	// RelayEndSeen once it dropped its view.
	Delete(ctx context.Context, id string) (others int, err error)
	// Publish sends r to every replica subscribed to the session, this
	// one included (r.From tells them apart). A replica subscribed after
	// Publish returned may miss it.
	Publish(ctx context.Context, id string, r Relay) error
	// Subscribe calls deliver with every Relay published for the session
	// from when it returns until cancel is called, in the order they were
	// published, on one goroutine per subscription at most; deliver must
	// not block for long. cancel may be called from deliver, and must
	// then not wait for it.
	Subscribe(ctx context.Context, id string, deliver func(Relay)) (cancel func(), err error)
}

// SessionRecord is what a [Cluster] keeps of a session.
type SessionRecord struct {
	// Principal is the key of the principal the session is bound to (see
	// [WithPrincipal]); "" without authorization.
	Principal string
	// State is the server's state of the session, opaque to the transport
	// (see transport.Shared); nil until the server stores one.
	State []byte
}

// RelayKind says what a [Relay] carries.
type RelayKind uint8

// The relay kinds.
const (
	// RelayClient carries a message a client posted that is not a
	// request: a notification (notifications/cancelled among them) or the
	// answer to a server request, which may be waited for on another
	// replica. Data is the encoded message.
	RelayClient RelayKind = iota + 1
	// RelayStandalone carries a message for the session's standalone GET
	// stream, which another replica may be carrying. Data is the encoded
	// message.
	RelayStandalone
	// RelayEvent says that events were stored for a stream whose client
	// left, so that a replica carrying its resumption sends them. Data is
	// the stream's key.
	RelayEvent
	// RelayState carries the state a replica stored (Data).
	RelayState
	// RelayEnd says the session ended: its client deleted it.
	RelayEnd
	// RelayForward carries a request forwarded to one replica (see
	// Forwarder); Data is the implementation's.
	RelayForward
	// RelayAnswer carries the answer to a forwarded request.
	RelayAnswer
	// RelayBroadcast carries a server's event for every replica (see
	// server.Fanout).
	RelayBroadcast
	// RelayStateSeen says that its sender applied a state another replica
	// stored: Data is the SHA-256 of the state.
	RelayStateSeen
	// RelayEndSeen says that its sender dropped its view of a session
	// another replica deleted (RelayEnd). Data is empty.
	RelayEndSeen
	// RelayCancel carries a 2026-07-28 client's notifications/cancelled
	// to every replica, for the one running the request it names, which
	// cancels it if it is the same caller's. It is published on the
	// pseudo-session "cancels", to which every replica subscribes. Data is
	// the caller's key (its length in 4 bytes, big-endian, then the key)
	// and the encoded notification.
	RelayCancel
)

// String returns the kind's name, as metrics label it.
func (k RelayKind) String() string {
	switch k {
	case RelayClient:
		return "client"
	case RelayStandalone:
		return "standalone"
	case RelayEvent:
		return "event"
	case RelayState:
		return "state"
	case RelayEnd:
		return "end"
	case RelayForward:
		return "forward"
	case RelayAnswer:
		return "answer"
	case RelayBroadcast:
		return "broadcast"
	case RelayStateSeen:
		return "state_seen"
	case RelayEndSeen:
		return "end_seen"
	case RelayCancel:
		return "cancel"
	}
	return "unknown"
}

// Relay is one message between the replicas that hold a session.
type Relay struct {
	Kind RelayKind
	// From is the [Cluster.Replica] of the replica that sent it.
	From string
	// Data is what the kind says.
	Data []byte
}

// Forwarder is a [Cluster] that can also carry a request to one replica
// and its answer back: the Endpoint forwards a 2026-07-28 task request
// (tasks/get, tasks/update, tasks/cancel) to the replica that runs the
// task, whose name the task id starts with (see server.WithTaskIDPrefix).
// Package internal/redisstore's Store is one.
type Forwarder interface {
	Cluster
	// Forward sends req to replica and returns its answer, or an error
	// when none came (the replica is gone, or ctx ended).
	Forward(ctx context.Context, replica string, req []byte) ([]byte, error)
	// HandleForwarded has handle answer the requests other replicas
	// forward to this one, until stop is called.
	HandleForwarded(handle func(ctx context.Context, req []byte) []byte) (stop func(), err error)
}

// Leases is a [Cluster] that knows which replicas are alive: each holds a
// lease it renews, and a replica whose lease expired is gone (killed, or
// cut off). A replica resuming a stream of a gone replica answers the
// stream's request with a JSON-RPC error (-32000, "server instance lost"),
// once, and counts it (see [Config].OnRequestLost). Package internal/redisstore's
// Store is one.
type Leases interface {
	Cluster
	// Alive reports whether replica holds its lease.
	Alive(ctx context.Context, replica string) (bool, error)
	// Claim reports whether the caller is the first to claim name in the
	// session; the claim lasts as long as the session's events.
	Claim(ctx context.Context, session, name string) (bool, error)
}
