package streamable

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"net/http"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A 2026-07-28 request is a POST of its own, and so is the client's
// notifications/cancelled for it (go-sdk sends one after aborting the
// request's POST; mcp-remote while the request's stream stays open). The
// Endpoint matches the two by owner (ownerOf: the principal, else the
// client's address) and request id, in a registry of the stateless
// requests in flight here, keyed only by ids of requests in flight. A
// client cancels only its own requests: one with a principal, by that
// principal's cancel; one without, whose address other clients may share
// (a proxy, another process of the host), only once it closed the
// request's stream itself (cancelWhenGone). Unmatched here, with a
// Cluster, the cancel goes to the other replicas (RelayCancel) at a rate
// bounded per caller (cancelRelayBudget); else it is ignored.

// The registry is callShards parts, each with its own lock and
// callBuckets chains: a request is filed in the chain its key's hash
// picks, linked through itself (oneShot.prev and next), so that filing and
// forgetting it touch no map and allocate nothing. Its size is fixed; a
// chain holds the requests in flight whose keys' hashes pick it, which a
// client cannot choose (the hash's seed is the Endpoint's own).
const (
	callShards  = 16
	callBuckets = 64
)

// statelessCalls is the registry of the stateless requests in flight.
type statelessCalls struct {
	seed   maphash.Seed
	shards [callShards]callShard
}

type callShard struct {
	mu      sync.Mutex
	buckets [callBuckets]*oneShot // each the head of a chain
}

// callKey is a stateless request's key: its caller and its id.
type callKey struct {
	caller string
	id     transport.ID
}

func newStatelessCalls() *statelessCalls {
	return &statelessCalls{seed: maphash.MakeSeed()}
}

// bucket returns the chain a key of hash is filed in, and its shard.
func (c *statelessCalls) bucket(hash uint64) (*callShard, **oneShot) {
	sh := &c.shards[hash%callShards]
	return sh, &sh.buckets[hash/callShards%callBuckets]
}

// add files conn, a request in flight, under its key.
func (c *statelessCalls) add(conn *oneShot) {
	conn.hash = maphash.Comparable(c.seed, callKey{conn.caller, conn.req.ID}) // once: remove needs no other
	sh, head := c.bucket(conn.hash)
	sh.mu.Lock()
	conn.next = *head
	if conn.next != nil {
		conn.next.prev = conn
	}
	*head = conn
	sh.mu.Unlock()
}

// remove forgets conn, which add filed.
func (c *statelessCalls) remove(conn *oneShot) {
	sh, head := c.bucket(conn.hash)
	sh.mu.Lock()
	if conn.prev != nil {
		conn.prev.next = conn.next
	} else {
		*head = conn.next
	}
	if conn.next != nil {
		conn.next.prev = conn.prev
	}
	conn.prev, conn.next = nil, nil
	sh.mu.Unlock()
}

// find returns the request in flight under k; nil when there is none, or
// when the caller has several with that id: which one it meant cannot be
// told, and the one it did not mean must not be cancelled.
func (c *statelessCalls) find(k callKey) *oneShot {
	hash := maphash.Comparable(c.seed, k)
	sh, head := c.bucket(hash)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var found *oneShot
	for p := *head; p != nil; p = p.next {
		if p.hash != hash || p.caller != k.caller || p.req.ID != k.id {
			continue // another key in the same chain
		}
		if found != nil {
			return nil
		}
		found = p
	}
	return found
}

// cancelledID returns the request id a notifications/cancelled names.
func cancelledID(n *transport.Request) (transport.ID, bool) {
	var p struct {
		RequestID transport.ID `json:"requestId"`
	}
	if json.Unmarshal(n.Params, &p) != nil || !p.RequestID.IsValid() {
		return transport.ID{}, false
	}
	return p.RequestID, true
}

// cancelStateless acts on a 2026-07-28 notifications/cancelled posted by
// r's caller: it cancels the caller's request in flight here, or asks the
// other replicas to.
func (h *Endpoint) cancelStateless(r *http.Request, n *transport.Request) {
	id, ok := cancelledID(n)
	if !ok {
		return
	}
	caller := h.ownerOf(r)
	if h.cancelHere(callKey{caller, id}, n) || h.cfg.cluster == nil {
		return
	}
	if !h.relayBudget.allow(caller, time.Now()) {
		if h.cfg.onReject != nil {
			h.cfg.onReject(protocol.RejectCancelRelayLimit)
		}
		return
	}
	data, err := transport.AppendMessage(nil, n)
	if err != nil {
		return
	}
	rel := replication.Relay{Kind: replication.RelayCancel, From: h.cfg.cluster.Replica(), Data: appendCancel(nil, caller, data)}
	if err := h.cfg.cluster.Publish(context.WithoutCancel(r.Context()), cancelTopic, rel); err != nil {
		h.cfg.logger.Warn("streamable: cannot relay a cancel to the other replicas", "error", err)
	}
}

// cancelHere cancels the request in flight here under k with n, the
// client's notification, at once when the request has a principal, else
// once its stream closes; false when there is none.
func (h *Endpoint) cancelHere(k callKey, n *transport.Request) bool {
	conn := h.calls.find(k)
	if conn == nil {
		return false
	}
	switch {
	case !conn.byAddress:
		conn.cancel(n)
	case !conn.cancelWhenGone(n):
		if h.cfg.onReject != nil {
			h.cfg.onReject(protocol.RejectCancelUnproven) // a second one, while one is held
		}
	case h.onHeld != nil:
		h.onHeld()
	}
	return true
}

// cancelTopic is the pseudo-session whose relays carry the cancels of
// stateless requests to every replica: a session id has 22 characters.
const cancelTopic = "cancels"

// subscribeCancels has the cancels other replicas relay reach this one's
// requests; the returned function ends it (nil when it could not start).
func (h *Endpoint) subscribeCancels() func() {
	cluster := h.cfg.cluster
	self := cluster.Replica()
	stop, err := cluster.Subscribe(context.Background(), cancelTopic, func(r replication.Relay) {
		if r.Kind != replication.RelayCancel || r.From == self {
			return
		}
		caller, data, ok := parseCancel(r.Data)
		if !ok {
			h.relayRefused(relayRefusedCancel)
			return
		}
		m, err := transport.DecodeMessage(data)
		n, isRequest := m.(*transport.Request)
		if err != nil || !isRequest || n.Method != "notifications/cancelled" {
			h.relayRefused(relayRefusedCancel)
			return
		}
		if id, ok := cancelledID(n); ok {
			h.cancelHere(callKey{caller, id}, n)
		}
	})
	if err != nil {
		h.cfg.logger.Warn("streamable: cannot receive the cancels other replicas relay", "error", err)
		return nil
	}
	return stop
}

// relayRefusedCancel is the OnRelayRefused reason (replication.Config) of
// a RelayCancel that is not a caller and a notifications/cancelled, which
// no replica sends.
const relayRefusedCancel = "cancel"

// appendCancel appends a RelayCancel's data: the caller's length (4 bytes,
// big-endian), the caller, the encoded notification.
func appendCancel(b []byte, caller string, notification []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(caller)))
	b = append(b, caller...)
	return append(b, notification...)
}

// parseCancel splits a RelayCancel's data (see appendCancel).
func parseCancel(data []byte) (caller string, notification []byte, ok bool) {
	if len(data) < 4 {
		return "", nil, false
	}
	n := binary.BigEndian.Uint32(data)
	if uint64(n) > uint64(len(data)-4) {
		return "", nil, false
	}
	return string(data[4 : 4+n]), data[4+n:], true
}
