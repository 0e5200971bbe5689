package vocab

import (
	"fmt"

	"github.com/vigil-mcp/vigil/internal/labelvocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Metrics returns the vocabulary the metrics collector labels with
// (internal/metrics.New), each value as its label.
func Metrics() labelvocab.Vocabulary {
	return labelvocab.Vocabulary{
		Causes:            labels(CancelReasons()),
		DropReasons:       labels(DropReasons()),
		WriteClasses:      labels(WriteClasses()),
		RejectReasons:     labels(RejectReasons()),
		Quotas:            labels(Quotas()),
		Codes:             labels(Codes()),
		MethodNotFound:    protocol.CodeMethodNotFound.String(),
		InvalidParams:     protocol.CodeInvalidParams.String(),
		MissingCapability: protocol.CodeMissingRequiredClientCapability.String(),
		Versions:          protocol.Versions(),
		EraVersions:       EraVersions(),
		OfEra:             OfEra,
	}
}

// labels returns the String forms of values, in order.
func labels[T fmt.Stringer](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}
	return out
}
