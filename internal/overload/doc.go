// Package overload decides, for the whole process, which requests to
// refuse at once because the process is overloaded, so that the requests
// it admits stay fast instead of every request queueing.
//
// The signal is how long requests wait before the process reads them:
// every Interval/SamplesPerInterval, the request at hand is measured on
// its connection's socket (on Linux, TCP_INFO's time since the socket
// last received data, which for a request just read is how long it
// waited in the kernel and for a goroutine to read it), and an interval's
// delay is the 90th percentile of its measures. The wait grows with the
// requests queued ahead of it; a handler that sleeps or waits for a slow
// backend adds none, so slow calls are never shed. The Go runtime's
// scheduling latency (/sched/latencies:seconds), the signal where no
// socket can be read (stdio, another OS), misses most of the queue: while
// the CPUs are saturated the scheduler polls the network only when its
// run queues are empty, so thousands of ready requests wait in the
// kernel, not in the run queue. An interval in which the process used
// less than MinBusy of its processors is calm, whatever the delay: the
// wait is then not of its own making (a busy machine, a noisy neighbor),
// and refusing its clients would not shorten it. So is one in which the
// last Window intervals used less than FullBusy of the most they used
// lately: shedding never leaves the CPUs idle, since a share that sent
// away more clients than the queue needed finds the CPUs idle and falls
// until the clients are back. So is one in which
// fewer than Config.MinWaiting requests waited (by Little's law, the
// requests per second times their mean delay): a handful of clients with
// heavy requests wait for each other's CPU, and sending one of them away
// for seconds serves no more.
//
// The actuator is the share of requests refused, moved each interval by
// how far the median of the last Window intervals' delays is from the
// target (Gain): up while over it, down while under it, to nothing at
// once when the CPUs idle or the queue is gone; at most the Limiter may refuse (a tenth by
// default).
// The median makes a single burst no overload. The delay settles at the
// target whatever the load, where a share in proportion to the excess
// would hold it as far over as the share needed (twice the target for
// all it may refuse), and admitted requests would wait that much longer.
// A client that honors Retry-After stays away for it, and a share
// refused now empties the queue at once; the clients come back after
// Retry-After, 1 to 3 s, and the share falls as the delay
// drops under the target, or at once if the CPUs idle. A controller that
// cut the share admitted multiplicatively while the delay stayed high
// (AIMD), or one allowed to refuse much more than a tenth, sends nearly
// every client away before the first of them has left, and the process
// swings between overload and idle; a share that moves by a tenth of the
// excess each interval settles where just enough clients wait.
// TestClosedLoopSettles simulates clients that honor Retry-After and
// ones that ignore it against the Limiter.
//
// Retry-After itself is how soon there is room, the time the queue
// takes to drain (by Little's law the mean wait, 1 s for cheap
// requests), plus up to MaxRetryAfter-1 s at random, at most
// MaxRetryAfter: the clients refused within a second come back spread
// over the next three, not together: with the drain time alone, 2,048
// clients honoring it came back in waves (docs/limits.md).
//
// The share is refused from the heaviest callers first (fair.go): the
// caller of each measured request is noted, and while shedding, a request
// of a caller that sends under half the mean share of the requests is
// admitted, the others refused in proportion to their share; a caller
// within its quotas then cannot have another's requests refused. A
// request whose caller is unknown ([Limiter.Shed]) is refused uniformly.
//
// A limit on requests in flight would not do: a cheap request's handler
// runs within one scheduling turn of its connection's goroutine, so the
// count in flight stays near GOMAXPROCS however long requests wait before
// they are read; refusing a share instead sends that share of the clients
// away (Retry-After), which is what empties the queue.
//
// The share refused is at most a tenth by default (MinAdmit 0.9): a
// refusal of a cheap request costs about what serving it costs, so when
// clients ignore Retry-After, refusing more cannot shorten the queue and
// only loses goodput; clients that honor it need only a few percent
// refused to keep most of them away.
//
// The delay is read lazily, by the requests that find a measure or an
// interval due (otherwise a request costs a clock read and three atomic
// loads, and while shedding a look-up of its caller's share): there is
// no goroutine to stop. Tests inject the clock, the measures, the
// scheduling latency, the CPU time and the random source.
package overload
