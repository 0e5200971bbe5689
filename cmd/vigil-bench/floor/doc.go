// Command floor is the floor of Vigil's service benchmark (make
// bench-service): a plain net/http server that decodes each JSON-RPC
// request with encoding/json and answers what cmd/vigil answers, with
// nothing else: no sessions kept, no tracing, metrics, logging or limits.
//
// It answers initialize with vigil's result and a fresh Mcp-Session-Id
// header (so that the same client opens a "session" on it),
// notifications with 202, and tools/call of echo with vigil's result: the
// 2025 form, or the 2026-07-28 form (resultType and _meta) when the
// request's MCP-Protocol-Version header says 2026-07-28. For make
// bench-scale, it answers a GET with an SSE stream it holds open, and a
// tools/call of test_trigger_tool_change writes one
// notifications/tools/list_changed event, encoded once, to every open
// stream (each GET's handler waits on a broadcast, writes, flushes).
// Anything else is 400.
//
// With -relay COMMAND, it is the floor of a gateway in front of a server
// over stdio: it starts COMMAND, initializes a session with it, and writes
// each tools/call (of any tool) to its standard input as it came, one at a
// time, answering with the line that answers its id.
//
// It listens on -addr, a loopback address only, and prints
// "listening http://host:port/mcp" on standard output once it does.
package main
