// Command scale is the client side of Vigil's scale benchmark (make
// bench-scale), a process of its own so that the servers' CPU time and
// memory are theirs alone. cmd/vigil-bench -scale starts the servers and
// runs it once per phase (-phase) against vigil (-vigil, -vigil-pid) and
// the net/http floor (-floor, -floor-pid); it prints one table per phase,
// vigil, the floor and their ratio, and a PASS or FAIL line per acceptance
// item of issue 45 that the phase measures (the overload's goodput at
// issue 88's 90% of the peak).
//
// streams: it opens -sessions 2025-06-18 sessions on each server, each
// with its standalone GET SSE stream open (a raw connection read by one
// goroutine through a small bufio.Reader), and reports the server's VmRSS
// growth per session and stream after -settle; then -fanouts times it
// calls test_trigger_tool_change from one more session and waits until
// every stream has the notifications/tools/list_changed event it causes:
// the fan-out time (from the call sent until the last stream has the
// event; the median of the fan-outs), the server's utime+stime over the
// fan-outs per notified session, and the growth per session and stream
// again after them. Each stream must get each fan-out exactly once.
//
// overload: tools/call echo at each of -clients concurrent clients
// (sessions: one per 8 clients), for -round each, honoring Retry-After
// on 503 and 429 (a refused client waits that long before its next
// request) and then ignoring it (it retries at once): goodput (answers
// with the echo per second), the p99 latency of those answers, refusals
// per second and whether each refusal carried Retry-After, and other
// failures. Each level is compared with the first, the peak, through
// rounds adjacent in time, since the machine's speed drifts over tens of
// seconds: honoring Retry-After, the phase runs -reps reps, in each of
// which one server runs its rounds at every level back to back, then the
// other; from one rep to the next the order of the levels reverses and
// the other server goes first, so that a drift linear in time favors a
// level in one rep as much as it penalizes it in the next. A level's "of
// peak" is the median over the reps of its goodput over the same rep's
// peak round, not the ratio of the medians; its other figures are medians
// over the reps. Ignoring Retry-After, a weaker check, runs one rep the
// same way.
//
// callers: on vigil alone, started with its per-caller quotas on,
// -heavy-callers heavy callers (-heavy-clients each, from 127.0.0.1 and
// 127.0.0.3 on, ignoring Retry-After, each within the default in-flight
// quota) and a light one (-light-clients from 127.0.0.2, honoring it)
// call echo at once, each in sessions of its own,
// for -round after a warm-up: each caller's goodput, p99 and refusals,
// and PASS when the light caller's refusals are under 0.1% of its
// requests (vigil sheds the callers holding the most first).
//
// payload: -payload-clients concurrent clients, one session each, call
// echo with a text of -payload-bytes for -round: calls per second, p99,
// the server's VmRSS at the start and its peak (VmHWM, reset at the start
// through /proc/<pid>/clear_refs) against the bound start + 2 × payload ×
// clients + 16 MiB.
package main
