// Package housecheck holds tests of the repository's house rules: rules
// about the repository as a whole (its README, the links between its
// documentation pages) rather than about one package, checked by every
// `go test ./...`. It has no code to import.
package housecheck
