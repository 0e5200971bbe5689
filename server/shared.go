package server

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/vigil-mcp/vigil/transport"
)

// sharedState is the part of a session's state that the replicas serving
// a shared session keep in common (see transport.Shared): what initialize
// negotiated, whether the client completed it, the log level it set and
// the resources it subscribed to.
type sharedState struct {
	Version       string             `json:"version"`
	Ready         bool               `json:"ready,omitempty"`
	Client        Implementation     `json:"clientInfo"`
	Caps          ClientCapabilities `json:"capabilities"`
	LogLevel      string             `json:"logLevel,omitempty"` // set by logging/setLevel; "" before
	Subscriptions []string           `json:"subscriptions,omitempty"`
}

// shareState sets a session on a transport.Shared conn up: it restores the
// state the other replicas stored, if any, and follows their changes.
func (ss *Session) shareState() {
	sh, ok := transport.As[transport.Shared](ss.conn)
	if !ok {
		return
	}
	ss.shared = sh
	if state := sh.SharedState(); state != nil {
		ss.applyShared(state)
	}
	sh.SetStateUpdate(ss.applyShared)
}

// applyShared makes a state another replica stored this session's. A state
// that does not decode is ignored: the session keeps the one it has.
func (ss *Session) applyShared(state []byte) {
	var st sharedState
	if json.Unmarshal(state, &st) != nil || st.Version == "" {
		return
	}
	ss.mu.Lock()
	if ss.st.phase == phaseNew || (st.Ready && ss.st.phase == phaseInitialized) {
		ss.st.phase = phaseInitialized
		if st.Ready {
			ss.st.phase = phaseReady
		}
		// Bounded again: the record may come from an older replica.
		ss.st.version, ss.st.client, ss.st.caps = truncateUTF8(st.Version, maxClientInfoString), st.Client.bounded(), st.Caps.bounded()
	}
	ss.mu.Unlock()
	if sev, ok := parseLogLevel(st.LogLevel); ok {
		ss.logging.setLevel(sev)
	}
	ss.srv.resources.setSubscriptions(ss, st.Subscriptions)
}

// storeShared stores the session's state for the other replicas, when the
// session is shared. A failure is logged: the change holds on this replica.
func (ss *Session) storeShared(ctx context.Context) {
	if ss.shared == nil {
		return
	}
	ss.mu.Lock()
	st := sharedState{Version: ss.st.version, Ready: ss.st.phase == phaseReady, Client: ss.st.client, Caps: ss.st.caps}
	ss.mu.Unlock()
	if st.Version == "" {
		return // initialize was refused: nothing to share
	}
	ss.logging.mu.Lock()
	if ss.logging.set {
		st.LogLevel = ss.logging.level.String()
	}
	ss.logging.mu.Unlock()
	st.Subscriptions = ss.Subscriptions()
	state, err := json.Marshal(st)
	if err == nil {
		err = ss.shared.StoreState(context.WithoutCancel(ctx), state)
	}
	if err != nil {
		ss.logger().Warn("cannot store the shared session's state; other replicas do not see its change", "error", err)
	}
}

// outgoingID returns the id of the session's n-th request to the client:
// n, or for a shared session a string unique across its replicas.
func (ss *Session) outgoingID(n int64) transport.ID {
	if ss.shared == nil {
		return transport.Int64ID(n)
	}
	return transport.StringID(ss.shared.Replica() + "-" + strconv.FormatInt(n, 10))
}

// setSubscriptions makes uris the session's subscriptions.
func (rr *resourceRegistry) setSubscriptions(ss *Session, uris []string) {
	rr.subMu.Lock()
	defer rr.subMu.Unlock()
	if len(uris) == 0 {
		delete(rr.subs, ss)
		return
	}
	if rr.subs == nil {
		rr.subs = make(map[*Session]map[string]struct{})
	}
	set := make(map[string]struct{}, min(len(uris), maxSubscriptions))
	bytes := 0
	for _, u := range slices.Compact(slices.Sorted(slices.Values(uris))) {
		// Bounded as resources/subscribe bounds them: the record may come
		// from an older replica.
		if len(u) > maxURI || len(set) == maxSubscriptions || bytes+len(u) > maxSubscriptionBytes {
			continue
		}
		set[u], bytes = struct{}{}, bytes+len(u)
	}
	rr.subs[ss] = set
}
