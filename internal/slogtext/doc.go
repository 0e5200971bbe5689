// Package slogtext writes attributes as log/slog's TextHandler writes
// them (with no ReplaceAttr), byte for byte, for the fast paths of
// Vigil's logging: the request line of middleware.WithRequestLog, and [Handler],
// cmd/vigil's slog handler, which writes the lines it can itself. It
// formats the plain kinds only (string, integers, float, bool, duration,
// time); a caller hands anything else to the TextHandler. Of Vigil it
// imports only internal/asyncwriter.
package slogtext
