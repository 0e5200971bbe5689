package protocol

// RejectReason says why an incoming message was refused (or ignored) before
// it reached a handler. Its String form is the reason label of
// mcp_server_messages_rejected_total and of logs. The zero value is
// RejectOther.
type RejectReason uint8

// The reject reasons.
const (
	// RejectOther: any refusal outside the kinds below.
	RejectOther RejectReason = iota
	// RejectParseError: not JSON, or not UTF-8 ([CodeParseError]).
	RejectParseError
	// RejectInvalidRequest: not a valid JSON-RPC message, a forbidden
	// batch, an HTTP request of the wrong shape ([CodeInvalidRequest]).
	RejectInvalidRequest
	// RejectDuplicateID: the id of a request still in flight.
	RejectDuplicateID
	// RejectLifecycle: a request before initialize, or a second initialize.
	RejectLifecycle
	// RejectFrameTooLarge: over the transport's frame or body limit.
	RejectFrameTooLarge
	// RejectInFlightLimit: over the per-session in-flight limit.
	RejectInFlightLimit
	// RejectShuttingDown: arrived while the server drains for shutdown.
	RejectShuttingDown
	// RejectInvalidParams: params the core itself cannot use, such as
	// notifications/cancelled without a requestId.
	RejectInvalidParams
	// RejectUnknownResponse: a response to no pending server-to-client
	// request.
	RejectUnknownResponse
	// RejectProtocolMismatch: a request the protocol version rules refuse
	// (an unsupported version, headers that disagree with the body).
	RejectProtocolMismatch
	// RejectForbidden: HTTP, a Host or Origin the DNS-rebinding check
	// refuses (403).
	RejectForbidden
	// RejectSessionLimit: HTTP, over the session limit, or the endpoint
	// closed (503).
	RejectSessionLimit
	// RejectUnknownSession: HTTP, an unknown, deleted or expired session id
	// (404).
	RejectUnknownSession
	// RejectSessionPrincipal: HTTP, a session id presented by a principal
	// other than the one that opened the session (404, answered exactly as
	// an unknown session, so that nothing leaks).
	RejectSessionPrincipal
	// RejectOverloaded: the process is overloaded and sheds this request
	// at once, before any handler (HTTP 503 with Retry-After, or the busy
	// error); initialize, notifications and responses are never shed.
	RejectOverloaded
	// RejectStoreUnavailable: HTTP, a new session while the store the
	// replicas share (Redis) does not answer, so that its session count
	// cannot be checked (503 with Retry-After).
	RejectStoreUnavailable
	// RejectMemoryBudget: HTTP, a request while the request bodies all
	// callers hold are at the process's memory budget (503 with
	// Retry-After), refused before its body is read.
	RejectMemoryBudget
	// RejectCancelUnproven: a 2026-07-28 notifications/cancelled that
	// names a request by its client's address alone (no principal), which
	// any client at that address could have sent: it was held until the
	// request's stream closed, and the request was answered first (or it
	// came while one was held). Closing the request's stream cancels it.
	RejectCancelUnproven
	// RejectCancelRelayLimit: a 2026-07-28 notifications/cancelled that
	// matched no request here and was not relayed to the other replicas:
	// its caller was over its rate of relayed cancels.
	RejectCancelRelayLimit
)

var rejectReasons = [...]struct{ label, message string }{
	RejectOther:            {"other", "request refused"},
	RejectParseError:       {"parse_error", "parse error"},
	RejectInvalidRequest:   {"invalid_request", "invalid request"},
	RejectDuplicateID:      {"duplicate_id", "duplicate request id: a request with this id is still in flight"},
	RejectLifecycle:        {"lifecycle", "request out of the initialize lifecycle"},
	RejectFrameTooLarge:    {"frame_too_large", "message exceeds the maximum frame size"},
	RejectInFlightLimit:    {"in_flight_limit", "too many requests in flight"},
	RejectShuttingDown:     {"shutting_down", "server is shutting down"},
	RejectInvalidParams:    {"invalid_params", "invalid params"},
	RejectUnknownResponse:  {"unknown_response", "response to an unknown or abandoned request id: ignored"},
	RejectProtocolMismatch: {"protocol_mismatch", "protocol version mismatch"},
	RejectForbidden:        {"forbidden", "forbidden: Host or Origin not allowed"},
	RejectSessionLimit:     {"session_limit", "cannot start a session now"},
	RejectUnknownSession:   {"unknown_session", "unknown or terminated session"},
	RejectSessionPrincipal: {"session_principal_mismatch", "unknown or terminated session"},
	RejectOverloaded:       {"overloaded", "server overloaded: retry later"},
	RejectStoreUnavailable: {"store_unavailable", "session store unavailable: retry later"},
	RejectMemoryBudget:     {"memory_budget", "server memory budget exhausted: retry later"},
	RejectCancelUnproven:   {"cancel_unproven", "notifications/cancelled from an address any client there shares: held until the request's stream closes"},
	RejectCancelRelayLimit: {"cancel_relay_limit", "notifications/cancelled not relayed to the other replicas: over the caller's rate"},
}

// String returns the label value, such as "duplicate_id".
func (r RejectReason) String() string {
	if int(r) < len(rejectReasons) {
		return rejectReasons[r].label
	}
	return rejectReasons[RejectOther].label
}

// Message returns the standard text a refusal for r answers the client
// with, where the refusing code has no more precise one.
func (r RejectReason) Message() string {
	if int(r) < len(rejectReasons) {
		return rejectReasons[r].message
	}
	return rejectReasons[RejectOther].message
}

// MarshalText encodes r as its label, so that JSON logs and documents carry
// the label rather than the number.
func (r RejectReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
