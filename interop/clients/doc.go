// Package clients holds the real-client suite: MCP clients nobody on the
// project wrote (the official Go SDK, mcp-go, and through the npm harness in
// testdata/npm the Vercel AI SDK, LangChain's MCP adapters, mcp-remote and the
// TypeScript SDK v2) driven against the shipped vigil and vigil-everything
// binaries, in both protocol eras, over Streamable HTTP and stdio. It is a
// module of its own so that Vigil's go.mod gains none of their dependencies;
// `make clients` runs it.
package clients
