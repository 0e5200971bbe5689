package transport

import "time"

// ClientPresence is implemented by a Conn whose client may hold a stream
// open besides its requests' own, such as Streamable HTTP's standalone GET
// stream of a 2025 session. A client process that dies closes every
// connection it has at once, so a request's stream closing at about the
// time the standalone stream closed means the client is gone, not that it
// gave up the request; the server tells the two apart with it.
type ClientPresence interface {
	// StandaloneClosedAt returns when the client last closed its
	// standalone stream, or the zero time when it never did, or when one
	// is open again (the client is there).
	StandaloneClosedAt() time.Time
	// OnStandaloneClosed has f called each time the client closes its
	// standalone stream, after StandaloneClosedAt says so, so that a
	// request whose stream closed just before is told at once that its
	// client is gone. The server sets it once, as the session starts.
	OnStandaloneClosed(f func())
}
