// Package housecheck holds tests of the repository's house rules: rules
// about the repository as a whole rather than one package, checked by
// every `go test ./...`: the README and the links between the
// documentation pages, the length of comment blocks and the absence of
// measured figures in code comments, that internal/ holds leaf helpers
// only (TestInternalIsLeaves), and that every public package's exported
// API is the one listed in api/ (TestAPI; `make api` regenerates the
// listings after a decided change). It has no code to import.
package housecheck
