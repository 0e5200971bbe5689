// Package gcheadroom keeps the garbage collector from running often while
// the live heap is small, without letting large payloads in flight grow
// the heap past what GOGC alone would: after each collection it sets GOGC
// so that the heap goal is at least a headroom in all (live heap
// included), and the memory limit so that the heap stays within that goal
// until the next collection re-tunes.
//
// A service whose live heap is a few MiB but that allocates per request
// collects many times a second under GOGC=100 (a 4 MiB live heap has an
// 8 MiB goal), and spends a large share of its CPU marking and sweeping.
// The headroom is what a quarter second of small allocations takes, up to
// a fixed H (see HeadroomFor): a busy service collects about four times a
// second; one at rest, or moving large payloads, holds no more than it
// needs. Past it, the room for garbage is proportional to what a
// collection scans (see LimitFor), so that payload bytes, which it never
// scans, do not double; up to twice GOGC's while a quarter second of
// small allocations takes more (see BaseFor), since a collection of
// thousands of connections' goroutine stacks costs far more than its
// bytes say. GOGC set for one collection's live heap applies to
// the next one's: a live heap that doubles in between would double the
// goal, so the memory limit, set from the goal wanted, bounds it (never
// above GOMEMLIMIT).
//
// A process that goes quiet after a burst, such as thousands of sessions
// opened at once, holds the burst's garbage and the pages its last
// collection freed until the next collection, which at rest comes minutes
// later: under GOGC=100, up to its live heap again. So the tuner also
// looks for rest every RestInterval, and a process at rest whose heap is
// over the headroom, with spare memory worth a collection, collects and
// returns that memory to the operating system (see ReleaseAtRest). A rest
// that lasts RestPages intervals (a scrape now and then is rest) also
// gives back the heap's spare memory within the headroom (see
// ReleaseAtLongRest), and releases the executable's pages that starting
// up and the load before it touched (package exepages). Only a main package should use it, once: it
// changes process-wide runtime settings.
package gcheadroom
