// Package memory is an in-process [transport.Conn] pair, for tests and
// examples. Messages cross as encoded frames, so both ends exercise the real
// codec, and the pair behaves like a pipe: a write blocks until the other end
// reads it, and closing either end ends both.
package memory
