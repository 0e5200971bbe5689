package server

// Reasons the core passes to [Observer.MessageRejected] (and answers with) for
// the refusals telemetry counts by kind. Compare a reason with == to
// classify it; other reasons are free text.
const (
	// RejectDuplicateID: a request reused the id of a request still in
	// flight ([CodeInvalidRequest]).
	RejectDuplicateID = "duplicate request id: a request with this id is still in flight"
	// RejectTooManyInFlight: the session is at its in-flight limit (see
	// [WithMaxInFlight]; [CodeServerBusy]).
	RejectTooManyInFlight = "too many requests in flight"
	// RejectShuttingDown: the server is draining for shutdown
	// ([CodeServerBusy]).
	RejectShuttingDown = "server is shutting down"
	// RejectNotInitialized: a request other than initialize (or ping) came
	// before initialize ([CodeInvalidRequest]).
	RejectNotInitialized = "session not initialized: the first request must be initialize"
	// RejectAlreadyInitialized: a second initialize ([CodeInvalidRequest]).
	RejectAlreadyInitialized = "session already initialized"
	// RejectFrameTooLarge: a message over the transport's frame limit
	// ([CodeInvalidRequest]); the session then ends.
	RejectFrameTooLarge = "message exceeds the maximum frame size"
)
