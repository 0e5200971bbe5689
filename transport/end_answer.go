package transport

// EndAnswerer is implemented by a Conn that answers, itself, a request
// still unanswered when its session ends under it: Streamable HTTP
// answers a 2025 session's POST with -32000 "session terminated" when
// the client deletes the session (or it expires) during the call. The
// server records such a request as answered with that error, not as a
// dropped response: what the client received.
type EndAnswerer interface {
	// EndAnswer returns the error the Conn answered, or answers, request
	// id with because its session ended; nil when it delivers none (the
	// request's stream is gone, was cancelled, or had begun an event
	// stream, which then ends without an answer). Call it once the
	// session ended, or as the server ends it (it closes the Conn next),
	// after the server stopped writing to the request.
	EndAnswer(id ID) *Error
}
