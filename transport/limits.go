package transport

// The bounds the decoder puts on the members of a message that a receiver
// keeps for as long as the request runs (in its tables of requests in
// flight, its span names, its logs): a message over one is an invalid
// request before any of them sees it.
const (
	// maxMethodBytes bounds a method name. No method of the protocol is
	// longer than 40 bytes; 128 is the spec's bound on the names a client
	// chooses (tool names), so no valid method is refused.
	maxMethodBytes = 128
	// maxIDBytes bounds a string id, as decoded. A UUID is 36 bytes; a
	// longer id is refused with id null, since it cannot be kept to
	// answer with.
	maxIDBytes = 256
)
