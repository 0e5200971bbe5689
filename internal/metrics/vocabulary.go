package metrics

import "github.com/vigil-mcp/vigil/internal/labelvocab"

// maxVersions bounds the protocol versions a collector labels as they
// are (see numVersions).
const maxVersions = numVersions - 2

// Vocabulary is the part of the protocol's vocabulary the collector
// labels with: see [labelvocab.Vocabulary].
type Vocabulary = labelvocab.Vocabulary

// errorTypes returns the error_type values kept as they are: the codes a
// Vigil server answers with, and the named types.
func errorTypes(v Vocabulary) []string {
	return append(append([]string(nil), v.Codes...), namedErrorTypes()...)
}
