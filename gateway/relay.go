package gateway

import (
	"encoding/json"

	"golang.org/x/time/rate"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
)

// The rate at which one call's progress and log notifications are relayed
// to its caller, a token bucket: an upstream that sends them without end
// costs its caller no more; those over it are dropped and counted.
const (
	relayPerSecond = 100
	relayBurst     = 100
)

// bounded bounds the rate at which notes relays one call's progress and
// log notifications, together, to relayPerSecond; those over it are
// dropped and counted (mcp_gateway_upstream_dropped_total, progress and
// notification). Progress is lossy by nature: the caller still gets the
// call's result, after the progress relayed.
func (m *mount) bounded(notes *upstream.Notes) {
	bucket := rate.NewLimiter(relayPerSecond, relayBurst)
	t := m.g.tally[m.up.Name]
	if progress := notes.Progress; progress != nil {
		notes.Progress = func(p json.RawMessage) {
			if !bucket.Allow() {
				t.progress.Add(1)
				return
			}
			progress(p)
		}
	}
	if log := notes.Log; log != nil {
		notes.Log = func(p json.RawMessage) {
			if !bucket.Allow() {
				t.logs.Add(1)
				return
			}
			log(p)
		}
	}
}
