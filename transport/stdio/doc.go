// Package stdio is the MCP stdio transport: newline-delimited JSON-RPC
// messages on a reader and a writer, normally the process's standard input and
// output ([Std]).
//
// Each frame is one line. Frames longer than the configured maximum (4 MiB by
// default, [WithMaxFrameSize]) are refused without being buffered: the read
// fails with [transport.ErrFrameTooLarge] and the connection is done.
// Outgoing messages never contain a raw newline.
package stdio
