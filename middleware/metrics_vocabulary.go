package middleware

import (
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// metricsVocabulary is the protocol's vocabulary as the collector labels
// with it: every value of package protocol's enumerations, as labels.
func metricsVocabulary() metrics.Vocabulary {
	return metrics.Vocabulary{
		Causes:            metrics.Labels(protocol.CancelReasons()),
		DropReasons:       metrics.Labels(protocol.DropReasons()),
		WriteClasses:      metrics.Labels([]protocol.DropReason{protocol.DropWriterClosed, protocol.DropPeerGone}),
		RejectReasons:     metrics.Labels(protocol.RejectReasons()),
		Quotas:            metrics.Labels(protocol.Quotas()),
		Codes:             metrics.Labels(protocol.Codes()),
		MethodNotFound:    protocol.CodeMethodNotFound.String(),
		InvalidParams:     protocol.CodeInvalidParams.String(),
		MissingCapability: protocol.CodeMissingRequiredClientCapability.String(),
		Versions:          protocol.Versions(),
	}
}
