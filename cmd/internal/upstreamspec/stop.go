package upstreamspec

import "time"

// StopBudget is what -shutdown-grace keeps, after in-flight requests, for
// ending the upstreams: a quarter of it, from 100 ms to 2 s. Each stdio
// upstream's process gets four fifths of that to exit once its input is
// closed (SIGTERM halfway), then it is killed; the rest is vigil's own
// exit. In-flight requests get what is left: shutdown ends within
// -shutdown-grace whatever the upstreams do.
func StopBudget(grace time.Duration) time.Duration {
	return min(max(grace/4, 100*time.Millisecond), 2*time.Second)
}
