package vocab

import "slices"

// removedIn2026 lists the methods a 2026-07-28 (stateless) request may not
// call.
var removedIn2026 = []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "tasks/result", "tasks/list"}

// addedIn2026 lists the methods that came with 2026-07-28: a session may
// call them too, but no client of the session era needs them.
var addedIn2026 = []string{"server/discover", "subscriptions/listen"}

// RemovedIn2026 reports whether a 2026-07-28 (stateless) request may not
// call method.
func RemovedIn2026(method string) bool { return slices.Contains(removedIn2026, method) }

// InEra reports whether method is one of the methods the clients of an era
// call: for the stateless era (2026-07-28) every method but those it
// removed, for the session era every method but those 2026-07-28 added.
func InEra(stateless bool, method string) bool {
	if stateless {
		return !RemovedIn2026(method)
	}
	return !slices.Contains(addedIn2026, method)
}
