// Package loadgen drives an HTTP JSON-RPC endpoint, such as a Streamable
// HTTP MCP server, with concurrent clients over keep-alive connections:
// the load generator of Vigil's throughput and overhead benchmarks, in
// process (the benchmarks of transport/streamable and middleware) and
// against the shipped binary (cmd/vigil-bench). It is a leaf: it imports
// nothing of Vigil. Users test their own servers with server/mcptest.
//
// [Run] sends a number of requests over a number of workers and returns
// each request's latency, and [RunFor] does the same for a duration;
// [Bench] does so for b.N requests and reports req/s, the p99 latency and
// the process's CPU time per request ([ProcessCPU]; [CPUOf] reads that of
// another process, such as a server started apart). Each answer is
// checked: a request fails unless it is answered 200 with a body that
// contains what the caller expects. [OpenSession] and [SessionPost] open
// and address a 2025-era session, with the JSON-RPC written by hand.
package loadgen
