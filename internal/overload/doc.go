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
// The actuator is the share of requests refused, in proportion to how
// far the latency is over the target: none at the target, the most the
// Limiter may refuse (a tenth by default) at Span times the target over
// it. The latency it follows is the median of the last Window intervals
// (100 ms each), so that a single burst is not an overload. A client that
// honors Retry-After stays away for it: refusals turn clients away for
// seconds, and the effect of a share refused now is seen for seconds.
// A controller that kept lowering the share while the latency stayed
// high (AIMD) would send nearly every client away before the first of
// them had left, and the process would swing between overload and idle;
// a share that follows the latency settles where just enough clients
// wait. Retry-After itself is 1 to 3 seconds at random, so that the
// clients sent away together do not come back together.
//
// A limit on requests in flight would not do: a cheap request's handler
// runs within one scheduling turn of its connection's goroutine, so the
// count in flight stays near GOMAXPROCS however long requests wait before
// they are read; refusing a share instead sends that share of the clients
// away (Retry-After), which is what empties the run queue.
//
// The share refused is at most a tenth by default (MinAdmit 0.9): a
// refusal of a cheap request costs about what serving it costs, so when
// clients ignore Retry-After, refusing more cannot lower the latency and
// only loses goodput; clients that honor it need only a few percent
// refused to keep most of them away.
//
// The latency is sampled lazily, by the request that finds the interval
// over (otherwise a request costs a clock read and two atomic loads): there is no goroutine to
// stop. Tests inject the clock, the latency sampler and the random source.
package overload
