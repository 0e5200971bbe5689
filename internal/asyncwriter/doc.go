// Package asyncwriter provides [Writer], a bounded, buffered io.Writer that
// writes to another writer in the background, for a log whose records must
// never wait on the log's destination (a terminal, a pipe, a slow disk).
// It imports no Vigil package.
package asyncwriter
