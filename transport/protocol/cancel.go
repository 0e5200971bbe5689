package protocol

// CancelReason classifies why a request's work stopped: why its context
// was cancelled, or (ReasonUpstreamClosed, which cancels nothing) that what
// it relied on went away. Its String form is the cause label of metrics,
// spans and logs. The server package
// classifies a context's cause into one (server.CancelReasonOf).
type CancelReason uint8

// The cancel reasons, one per cause, plus None (not cancelled) and Other
// (cancelled by something else, such as the caller's context).
const (
	ReasonNone           CancelReason = iota // not cancelled
	ReasonClientCancel                       // the client sent notifications/cancelled
	ReasonTransportClose                     // the client is gone: its connection or session ended
	ReasonStreamClose                        // the client closed the request's own stream, and said nothing more
	ReasonShutdown                           // the server is shutting down
	ReasonTimeout                            // the handler ran out of time
	ReasonUpstreamClosed                     // no cancel: what the handler relied on (an upstream server) went away mid-request, recorded as its cause
	ReasonOther                              // anything else
)

var cancelReasonNames = [...]string{"none", "client_cancel", "transport_close", "stream_close", "shutdown", "timeout", "upstream_closed", "other"}

// String returns the label value: "client_cancel", "transport_close",
// "stream_close", "shutdown", "timeout", "upstream_closed", "other" (or
// "none").
func (r CancelReason) String() string {
	if int(r) < len(cancelReasonNames) {
		return cancelReasonNames[r]
	}
	return cancelReasonNames[ReasonOther]
}

// MarshalText encodes r as its label, so that JSON logs and documents carry
// the label rather than the number.
func (r CancelReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
