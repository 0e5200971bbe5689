// Package clients is the real-client suite: MCP clients nobody on the
// project wrote, each pinned, driven against the shipped servers (cmd/vigil
// and cmd/vigil-everything, built from the repository by TestMain) in both
// protocol eras, over Streamable HTTP and stdio where the client has both.
//
//   - go-sdk (github.com/modelcontextprotocol/go-sdk v1.8.0) and mcp-go
//     (github.com/mark3labs/mcp-go v1.2.1), in Go: this module has its own
//     go.mod so that Vigil's gains none of their dependencies.
//   - The Vercel AI SDK (@ai-sdk/mcp 2.0.99 with ai 7.0.173), LangChain
//     (@langchain/mcp-adapters 1.1.4), mcp-remote 0.15.1 (driven as a
//     desktop host drives it: newline-delimited JSON-RPC on its stdin and
//     stdout) and the TypeScript SDK v2 client (2.4.0), pinned in
//     testdata/npm (package-lock.json) with the scripts that drive them, run
//     on the Node 22 of the conformance step.
//
// TestFeatures* check every feature each client has (initialize, tools,
// resources, templates, prompts, completion, progress, logging, sampling,
// elicitation, roots, subscriptions) and TestPagination* its paging
// against a page-size-2 server. TestCancel* and TestKill* cut calls of
// vigil's sleep tool, 20 per client and era, each the client's own way
// (a cancel, an abort, or SIGKILL of the client's process with its
// standalone GET stream open), and check the cause that vigil records in
// mcp_server_cancellations_total (over stdio, where there is no /metrics,
// in its log line of the request). TestHandlerEndsWithItsStream times how
// soon the handler's context ends after each kind of cut, in process.
// Known client bugs are checked where they show, each named (goSDK...,
// mcpGo..., aiSdk..., langchain..., mcpRemote...) and listed in
// docs/development.md: when a client fixes one, its check fails and the
// listing is updated.
//
// Each top-level test starts its own server, so they run in parallel; `make
// clients` (part of `make test`) installs the npm clients and runs the
// suite verbosely with CI=true, which turns a missing component into a
// failure instead of a skip.
package clients
