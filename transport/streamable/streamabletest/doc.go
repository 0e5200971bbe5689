// Package streamabletest drives an HTTP JSON-RPC endpoint, such as a
// Streamable HTTP MCP server, with concurrent clients over keep-alive
// connections: the load generator of Vigil's throughput and overhead
// benchmarks (in-process, and cmd/vigil-bench against the shipped binary),
// for servers built on Vigil to measure theirs the same way.
//
// [Run] sends a number of requests over a number of workers and returns
// each request's latency, and [RunFor] does the same for a duration;
// [Bench] does so for b.N requests and reports req/s, the p99 latency and
// the process's CPU time per request ([ProcessCPU]; [CPUOf] reads that of
// another process, such as a server started apart). Each answer is
// checked: a request fails unless it is answered 200 with a body that
// contains what the caller expects.
package streamabletest
