package protocol

// Codes returns every code a Vigil server answers with, in a stable order,
// so that telemetry can create a series for each before it is first seen.
func Codes() []Code {
	return []Code{
		CodeParseError, CodeInvalidRequest, CodeMethodNotFound, CodeInvalidParams, CodeInternal,
		CodeServerBusy, CodeRequestTimeout, CodeResourceNotFound,
		CodeHeaderMismatch, CodeMissingRequiredClientCapability, CodeUnsupportedProtocolVersion,
		CodeURLElicitationRequired,
	}
}

// CancelReasons returns every reason a cancelled request can have (not
// ReasonNone), in a stable order: the values of the cause label.
func CancelReasons() []CancelReason {
	return []CancelReason{ReasonClientCancel, ReasonTransportClose, ReasonStreamClose, ReasonShutdown, ReasonTimeout, ReasonUpstreamClosed, ReasonOther}
}

// DropReasons returns every reason a response can be dropped for (not
// DropNone), in a stable order: the values of the drop reason label.
func DropReasons() []DropReason {
	return []DropReason{DropCancelled, DropWriterClosed, DropPeerGone, DropShutdown}
}

// Quotas returns every quota that can refuse a request, in a stable order,
// with QuotaOther last: the values of the quota label.
func Quotas() []Quota {
	return []Quota{QuotaSessions, QuotaInFlight, QuotaTasks, QuotaToolShare, QuotaRate, QuotaToolRate, QuotaBytes, QuotaOther}
}

// RejectReasons returns every reason a message can be refused for before a
// handler, in a stable order, with RejectOther last: the values of the
// reject reason label.
func RejectReasons() []RejectReason {
	return []RejectReason{
		RejectParseError, RejectInvalidRequest, RejectDuplicateID, RejectLifecycle,
		RejectFrameTooLarge, RejectInFlightLimit, RejectShuttingDown, RejectInvalidParams,
		RejectUnknownResponse, RejectProtocolMismatch, RejectForbidden, RejectSessionLimit,
		RejectUnknownSession, RejectSessionPrincipal, RejectOverloaded, RejectStoreUnavailable,
		RejectMemoryBudget, RejectCancelUnproven, RejectCancelRelayLimit, RejectOther,
	}
}
