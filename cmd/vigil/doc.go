// Command vigil is the Vigil MCP service. With no configuration it serves
// MCP over Streamable HTTP at http://127.0.0.1:8080/mcp, with Prometheus
// metrics at /metrics, liveness at /healthz, readiness at /readyz and a live
// debug page at /debug/vigil (what needs attention, per-method/tool rates,
// latencies and outcomes with 10-minute charts, sessions, requests in
// flight, and recent traces, which stay in memory unless OTEL_* configures
// an exporter). With -stdio it serves one
// session on standard input and output instead; standard output then
// carries only MCP, and logs go to standard error.
//
// Every request goes through the standard middleware chain: tracing,
// metrics, logging, panic recovery, a timeout and a per-tool concurrency
// limit. The demo tools are echo, sleep, countdown (progress),
// convert_temperature (typed input and output) and confirm_action
// (elicitation).
//
// On an address other than loopback, vigil refuses to start unless
// -auth-issuer turns OAuth authorization on or -allow-unauthenticated says
// to serve /mcp open. -admin-http moves the observability endpoints to a
// listener of their own, and -audit-log writes one JSON line per tool call.
// -skills serves a directory of Agent Skills (the skills extension).
//
// Configuration is by flags, each with an environment variable as its
// default, and the standard OTEL_* variables; run vigil -h for the list.
// On SIGTERM or SIGINT, vigil turns not ready, lets in-flight requests run
// for the shutdown grace, then exits.
package main
