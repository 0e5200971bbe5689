// Package slogtext writes attributes as log/slog's TextHandler writes
// them (with no ReplaceAttr), byte for byte, for the fast paths of
// Vigil's logging: middleware.Logging's request line and cmd/vigil's text
// handler. It formats the plain kinds only (string, integers, float, bool,
// duration, time); a caller hands anything else to the TextHandler. It
// imports no Vigil package.
package slogtext
