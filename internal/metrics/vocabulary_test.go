package metrics_test

import (
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// vocabulary is the vocabulary package middleware gives the collector,

// TestMetricsVocabulary holds the two equal).
func vocabulary() metrics.Vocabulary {
	v := metrics.Vocabulary{
		Causes:        metrics.Labels(protocol.CancelReasons()),
		DropReasons:   metrics.Labels(protocol.DropReasons()),
		RejectReasons: metrics.Labels(protocol.RejectReasons()),
		Quotas:        metrics.Labels(protocol.Quotas()),
		Codes:         metrics.Labels(protocol.Codes()),
		Versions:      protocol.Versions(),
	}
	v.WriteClasses = []string{protocol.DropWriterClosed.String(), protocol.DropPeerGone.String()}
	v.MethodNotFound, v.InvalidParams = protocol.CodeMethodNotFound.String(), protocol.CodeInvalidParams.String()
	v.MissingCapability = protocol.CodeMissingRequiredClientCapability.String()
	return v
}
