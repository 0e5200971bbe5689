// Package overload decides, for the whole process, which requests to
// refuse at once because the process is overloaded, so that the requests
// it admits stay fast instead of every request queueing.
//
// The signal is the Go runtime's own scheduling latency
// (runtime/metrics "/sched/latencies:seconds"): how long runnable
// goroutines waited for a CPU. A handler that sleeps or waits for I/O
// adds none, however many are in flight; only CPU saturation raises it.
// A signal from request latency (gradient or Vegas limits) could not tell
// a slow tool from queueing, and CoDel on queue time needs a queue the
// server owns, while here the queue is the runtime's run queue, before a
// request is even read.
//
// The actuator is the share of requests admitted, adjusted AIMD: every
// interval (100 ms), while the 90th percentile of the scheduling latency
// of that interval is above the target (and was for Sustain intervals in
// a row: a shorter burst is not an overload), the share is multiplied by 0.9
// (the backoff ratio of Netflix's concurrency-limits AIMD); while it is at
// or below, the share grows by 0.05 per interval back to 1, where nothing
// is shed. A steeper decrease (halving) sends half the clients away at
// once, and they all come back together after Retry-After: the load then
// swings between overload and idle at the Retry-After's period.
//
// A limit on requests in flight would not do: a cheap request's handler
// runs within one scheduling turn of its connection's goroutine, so the
// count in flight stays near GOMAXPROCS however long requests wait before
// they are read; refusing a share instead sends that share of the clients
// away (Retry-After), which is what empties the run queue.
//
// The share never goes below a floor (a half by default): a refusal of a
// cheap request costs about what serving it costs, so when clients ignore
// Retry-After, refusing more cannot lower the latency and only loses
// goodput; clients that honor it need only a few percent refused.
//
// The latency is sampled lazily, by the request that finds the interval
// over (otherwise a request costs a clock read and two atomic loads): there is no goroutine to
// stop. Tests inject the clock, the latency sampler and the random source.
package overload
