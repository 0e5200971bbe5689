package metrics

import "fmt"

// maxVersions bounds the protocol versions a collector labels as they
// are (see numVersions).
const maxVersions = numVersions - 2

// Vocabulary is the part of the protocol's vocabulary the collector labels
// with, each value as its label. Its maker (package middleware) fills it
// from package protocol's enumerations, so that the collector, a leaf,
// imports none of the module's public packages.
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
}

// Labels returns the label of each of values, in order.
func Labels[T fmt.Stringer](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}
	return out
}

// errorTypes returns the error_type values kept as they are: the codes a
// Vigil server answers with, and the named types.
func errorTypes(codes []string) []string {
	return append(append([]string(nil), codes...), namedErrorTypes()...)
}
