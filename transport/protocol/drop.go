package protocol

// DropReason says why a request ended without its response being written.
// Its String form is the reason label of metrics, spans and logs; the zero
// value, DropNone, means nothing was dropped.
type DropReason uint8

// The drop reasons.
const (
	// DropNone: the response was written (or there was none to write).
	DropNone DropReason = iota
	// DropCancelled: the client cancelled the request; MCP says not to
	// answer.
	DropCancelled
	// DropWriterClosed: the session's writer was already closed (the
	// transport closed, or this side closed it) when the answer was ready.
	DropWriterClosed
	// DropPeerGone: writing failed because the peer vanished (EPIPE,
	// ECONNRESET, its end of the pipe closed), now or on an earlier write.
	DropPeerGone
	// DropShutdown: the server cancelled the request to shut down.
	DropShutdown
)

var dropReasonNames = [...]string{"", "cancelled", "writer_closed", "peer_gone", "shutdown"}

// String returns the label value: "cancelled", "writer_closed",
// "peer_gone", "shutdown", or "" for DropNone.
func (r DropReason) String() string {
	if int(r) < len(dropReasonNames) {
		return dropReasonNames[r]
	}
	return ""
}

// MarshalText encodes r as its label, so that JSON logs and documents carry
// the label rather than the number.
func (r DropReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
