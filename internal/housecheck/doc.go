// Package housecheck holds tests of the repository's house rules: checks
// that read the module's source, such as the length of comment blocks and
// the absence of measured figures in code comments. It has no code of its
// own.
package housecheck
