package vocab

import "github.com/vigil-mcp/vigil/transport/protocol"

// Codes lists every code a Vigil server answers with, in a stable order
// (for pre-creating telemetry series).
func Codes() []protocol.Code {
	return []protocol.Code{
		protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeMethodNotFound, protocol.CodeInvalidParams, protocol.CodeInternal,
		protocol.CodeServerBusy, protocol.CodeRequestTimeout, protocol.CodeResourceNotFound,
		protocol.CodeHeaderMismatch, protocol.CodeMissingRequiredClientCapability, protocol.CodeUnsupportedProtocolVersion,
		protocol.CodeURLElicitationRequired,
	}
}

// CancelReasons lists every reason a cancelled context can have, in a
// stable order (for pre-creating telemetry series).
func CancelReasons() []protocol.CancelReason {
	return []protocol.CancelReason{protocol.ReasonClientCancel, protocol.ReasonTransportClose, protocol.ReasonStreamClose, protocol.ReasonShutdown, protocol.ReasonTimeout, protocol.ReasonUpstreamClosed, protocol.ReasonOther}
}

// DropReasons lists every reason a response can be dropped for, in a stable
// order (for pre-creating telemetry series).
func DropReasons() []protocol.DropReason {
	return []protocol.DropReason{protocol.DropCancelled, protocol.DropWriterClosed, protocol.DropPeerGone, protocol.DropShutdown}
}

// WriteClasses lists the classes of a failed write: [protocol.DropWriterClosed] (this
// side closed) and [protocol.DropPeerGone] (the peer vanished).
func WriteClasses() []protocol.DropReason {
	return []protocol.DropReason{protocol.DropWriterClosed, protocol.DropPeerGone}
}

// Quotas lists every quota, in a stable order (for pre-creating telemetry
// series); QuotaOther comes last.
func Quotas() []protocol.Quota {
	return []protocol.Quota{protocol.QuotaSessions, protocol.QuotaInFlight, protocol.QuotaTasks, protocol.QuotaToolShare, protocol.QuotaRate, protocol.QuotaToolRate, protocol.QuotaBytes, protocol.QuotaOther}
}

// RejectReasons lists every reject reason, in a stable order (for
// pre-creating telemetry series); RejectOther comes last.
func RejectReasons() []protocol.RejectReason {
	return []protocol.RejectReason{
		protocol.RejectParseError, protocol.RejectInvalidRequest, protocol.RejectDuplicateID, protocol.RejectLifecycle,
		protocol.RejectFrameTooLarge, protocol.RejectInFlightLimit, protocol.RejectShuttingDown, protocol.RejectInvalidParams,
		protocol.RejectUnknownResponse, protocol.RejectProtocolMismatch, protocol.RejectForbidden, protocol.RejectSessionLimit,
		protocol.RejectUnknownSession, protocol.RejectSessionPrincipal, protocol.RejectOverloaded, protocol.RejectStoreUnavailable,
		protocol.RejectMemoryBudget, protocol.RejectCancelUnproven, protocol.RejectCancelRelayLimit, protocol.RejectOther,
	}
}
