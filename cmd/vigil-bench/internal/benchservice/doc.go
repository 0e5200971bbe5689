// Package benchservice holds the pure parts of Vigil's service benchmark
// (make bench-service, make bench-idle): the statistics over rounds, the
// reading of a process's memory from /proc, and the report's table. The
// benchmark itself is three programs, each its own process so that the
// server's CPU time is the server's alone:
//
//   - cmd/vigil-bench, the orchestrator: builds cmd/vigil and the two
//     programs below with go build into a temporary directory, starts
//     vigil (default flags: tracing, metrics, a log line per request, limits
//     and timeout all on; its log to a file) and the floor on 127.0.0.1
//     ports of the kernel's choosing, then runs the load generator against
//     both and stops them;
//   - cmd/vigil-bench/floor, the floor: a plain net/http handler that
//     decodes the JSON-RPC request and answers what vigil answers for
//     initialize and for tools/call echo, nothing else;
//   - cmd/vigil-bench/load, the load generator: drives both servers with
//     the in-repo load generator internal/loadgen in interleaved rounds
//     and prints the report; or, in idle mode, opens many idle sessions on
//     vigil and reports its memory per session.
//
// What the in-process handler benchmarks of make bench-footprint share
// with cmd/vigil's is in cmd/internal/benchkit.
//
// Nothing here starts a process under go test.
package benchservice
