// Package housecheck holds tests of the repository's house rules: rules
// about the repository as a whole rather than one package (the README and
// the links between the documentation pages, the length of comment blocks
// and the absence of measured figures in code comments, the exported API,
// the import direction of internal/), checked by every `go test ./...`.
// It has no code to import.
package housecheck
