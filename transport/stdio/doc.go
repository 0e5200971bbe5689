// Package stdio is the MCP stdio transport: newline-delimited JSON-RPC
// messages on a reader and a writer, normally the process's standard input and
// output ([Std]).
//
// Each frame is one line. Frames longer than the configured maximum (4 MiB by
// default, [WithMaxFrameSize]) are refused without being buffered: the read
// fails with [transport.ErrFrameTooLarge] and the connection is done, unless
// [WithOversizeFrames] makes each such frame a matter of its own.
// Outgoing messages never contain a raw newline.
//
// A peer that stops reading is held back: while the messages waiting to be
// written hold more than [WithMaxQueuedBytes] (8 MiB by default), Read
// reads nothing, so the peer blocks on its own writes instead of this side
// buffering the answers to what it keeps sending.
package stdio
