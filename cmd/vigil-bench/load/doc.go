// Command load is the load generator of Vigil's service benchmark (make
// bench-service, make bench-idle), a process of its own so that the
// servers' CPU time is theirs alone. cmd/vigil-bench starts it; it drives
// servers already running, with internal/loadgen.
//
// By default it measures throughput: tools/call of echo, -clients
// concurrent keep-alive clients, JSON responses, against the floor (-floor,
// -floor-pid) and vigil (-vigil, -vigil-pid), first in 2025-06-18 sessions
// (-sessions of them, shared by the clients), then as 2026-07-28 stateless
// requests. After a warm-up of each server, it runs -rounds rounds of
// -round per server, interleaved (floor, vigil, floor, vigil, ...) so that
// other load on the machine slows both alike, and prints per server the
// median req/s, the p50 and p99 latency over all requests, the server
// process's CPU time (utime+stime from /proc/<pid>/stat) per request and
// its own while it loaded that server: on a machine the two share, the
// clients of a slower server wait, park and are woken more often per
// request, so the throughput ratio follows the sum of both.
// With -paced 0.8 both servers are held to 0.8 of the rate vigil reached
// in its warm-up, the requests spaced evenly, so that both are measured
// at one rate and one pattern of arrivals (a gateway against the server
// it fronts, at traffic the gateway can take).
// With -debug-refresh 2s it also GETs vigil's /debug/vigil every 2 s
// during vigil's rounds, as a browser with the page open does, and reports
// those GETs: what vigil loses to an open debug page is then the
// difference from a run without it.
//
// With -idle N it measures idle sessions instead, on vigil alone: it opens
// N 2025-06-18 sessions (initialize, notifications/initialized, then
// nothing), reports vigil's RSS growth per session (VmRSS of
// /proc/<pid>/status before and after) and its Go heap in use (from
// /metrics), then calls echo in -sample of the sessions, spread evenly,
// and reports how many calls succeeded. A session is only an id on the
// client side: the clients' keep-alive connections are shared.
package main
