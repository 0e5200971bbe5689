package labelvocab

// Vocabulary is the part of the protocol's vocabulary the metrics
// collector (internal/metrics) labels with, each value as its label.
// Package internal/vocab makes it (vocab.Metrics) from package protocol's
// enumerations, so that the collector, a leaf, imports none of the
// module's public packages, and vocab none of Prometheus.
type Vocabulary struct {
	// Causes, DropReasons, WriteClasses, RejectReasons and Quotas are
	// every value of their enumeration, in a stable order.
	Causes, DropReasons, WriteClasses, RejectReasons, Quotas []string
	// Codes are the JSON-RPC and MCP codes a Vigil server answers with,
	// in decimal.
	Codes []string
	// MethodNotFound, InvalidParams and MissingCapability are three of
	// Codes: the refusals of an unknown method, of an unknown tool, and of
	// a 2026-07-28 client without the capability a tool asks it for.
	MethodNotFound, InvalidParams, MissingCapability string
	// Versions are the protocol versions served, newest first: at most
	// five (the collector labels any more other).
	Versions []string
	// EraVersions are the newest version of each era, whose request
	// durations are created at zero.
	EraVersions []string
	// OfEra reports whether the clients of version's era call method.
	OfEra func(version, method string) bool
}
