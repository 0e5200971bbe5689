// Command vigil-bench benchmarks the Vigil service as shipped: the real
// cmd/vigil binary, with its default flags (a span per request into the
// in-memory trace ring, Prometheus metrics, a log line per request to
// standard error, the session, in-flight, concurrency and body limits, the
// request timeout), against a floor, a plain net/http handler that
// answers the same JSON-RPC. Run it from the module with make
// bench-service, or make bench-idle for idle sessions.
//
// It builds cmd/vigil, cmd/vigil-bench/floor and cmd/vigil-bench/load
// with go build into a temporary directory,
// starts vigil and the floor as processes of their own on 127.0.0.1 ports
// the kernel picks (vigil's log goes to a file, as a user would redirect
// it), runs the load generator, a third process, against them, and stops
// them. The load generator prints the report; see its documentation and
// that of package cmd/vigil-bench/internal/benchservice for what is
// measured.
//
// With -against DIR, the baseline is not the floor but cmd/vigil built
// from the checkout in DIR (the parent commit), with the same flags, so
// that one run compares two commits with their rounds interleaved.
// -vigil-arg adds an argument to vigil's (repeatable).
//
// With -idle N, it starts vigil alone with -max-sessions raised above N
// (and no -quota-sessions: the load generator is one caller) and has the load generator open N idle sessions and report vigil's
// memory per session. With -auth (make bench-auth), it measures what
// authorization costs instead: the same vigil twice, one with
// -auth-issuer pointing at a minimal issuer it serves itself (RFC 8414
// metadata and a JWKS; RS256 tokens minted in process, one per client) and
// one without auth, under the same load; then that vigil against the same
// with -auth-policy (benchPolicy), for what a tool policy costs. With
// -gateway (make bench-gateway), it measures a gateway hop: vigil called
// directly against a second vigil that fronts it with -upstream, over
// HTTP and then over stdio, the gateway's CPU per request against the
// upstream's. With -footprint (make
// bench-footprint), it measures no throughput: it runs cmd/vigil's
// BenchmarkServiceHandler and the floor's BenchmarkFloorHandler under
// valgrind's cachegrind and reports, per request, the instructions, the
// L1 instruction- and data-cache misses and the mispredicted branches of
// each handler, counts that are the same from run to run. With -scale
// (make bench-scale), it raises its file-descriptor limit to the hard
// limit (inherited by what it starts), builds cmd/vigil,
// cmd/vigil-everything and cmd/vigil-bench/scale too, and runs each phase
// of -scale-phases against a fresh vigil and floor: streams and fan-out on
// vigil-everything (-resumable=false -list-changed-delay 0), overload and
// a large echo on vigil, with the per-caller quotas off, since one load
// generator stands for every client (the overload runs each server's
// levels back to back, -overload-reps times honoring Retry-After, and
// compares each level with the same rep's peak), and four heavy callers
// and a light one (loopback addresses) at once on vigil with its quotas on, whose
// shedding must refuse the heavy ones' requests, not the light one's; -vigil-arg adds
// to vigil's arguments there too. The scale program prints the tables,
// and vigil-bench repeats their PASS and FAIL lines at the end. VIGIL_*
// and OTEL_* variables are removed from vigil's environment, so that it
// runs with its defaults.
package main
