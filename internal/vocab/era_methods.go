package vocab

import (
	"slices"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// removedIn2026 lists the methods a 2026-07-28 (stateless) request may not
// call.
var removedIn2026 = []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "tasks/result", "tasks/list"}

// addedIn2026 lists the methods that came with 2026-07-28: a session may
// call them too, but no client of the session era needs them.
var addedIn2026 = []string{"server/discover", "subscriptions/listen"}

// RemovedIn2026 reports whether a 2026-07-28 (stateless) request may not
// call method.
func RemovedIn2026(method string) bool { return slices.Contains(removedIn2026, method) }

// EraVersions returns the newest protocol version of each era a server
// serves: 2026-07-28 (stateless) and 2025-11-25 (sessions), the versions
// whose request series are created at zero.
func EraVersions() []string {
	return []string{protocol.Version20260728, protocol.Version20251125}
}

// OfEra reports whether method is one of the methods the clients of the
// era of version call: for 2026-07-28 every method but those it removed,
// for a session version every method but those 2026-07-28 added.
func OfEra(version, method string) bool {
	if version == protocol.Version20260728 {
		return !RemovedIn2026(method)
	}
	return !slices.Contains(addedIn2026, method)
}
