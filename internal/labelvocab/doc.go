// Package labelvocab holds the vocabulary the metrics collector labels
// with ([Vocabulary]): a leaf that imports nothing, so that the collector
// (internal/metrics) and the package that fills it from the protocol
// (internal/vocab) share it without the server depending on Prometheus
// or OpenTelemetry through either.
package labelvocab
