package overload

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedSampler reads the runtime's scheduling latency histogram and
// returns the 90th percentile of what it counted since the previous read.
type schedSampler struct {
	s    []metrics.Sample
	prev []uint64
}

const schedLatencies = "/sched/latencies:seconds"

// minScheduled is how many goroutines must have been scheduled in an
// interval for its latency to mean overload: a process that schedules
// fewer is not loaded, whatever delays the operating system gives its
// few wake-ups (a busy test machine, a noisy neighbor), and sheds
// nothing.
const minScheduled = 1000

func newSchedSampler() *schedSampler {
	r := &schedSampler{s: []metrics.Sample{{Name: schedLatencies}}}
	r.p90() // the first read is the baseline
	return r
}

// p90 returns the 90th percentile of the latencies counted since the last
// call, rounded up to its bucket's upper bound; 0 when fewer than
// minScheduled were counted or the runtime lacks the metric.
func (r *schedSampler) p90() time.Duration {
	metrics.Read(r.s)
	if r.s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := r.s[0].Value.Float64Histogram()
	if len(r.prev) != len(h.Counts) {
		r.prev = append(r.prev[:0], h.Counts...)
		return 0
	}
	var total uint64
	for i, c := range h.Counts {
		total += c - r.prev[i]
	}
	var p90 time.Duration
	if total >= minScheduled {
		p90 = quantile(h.Counts, r.prev, h.Buckets, total)
	}
	copy(r.prev, h.Counts)
	return p90
}

// quantile returns the upper bound of the bucket holding the 90th
// percentile of the counts in counts minus prev (total of them); buckets
// has one boundary more than counts.
func quantile(counts, prev []uint64, buckets []float64, total uint64) time.Duration {
	rank := (total*9 + 9) / 10 // ceil(0.9 * total)
	var seen uint64
	for i, c := range counts {
		if seen += c - prev[i]; seen >= rank {
			upper := buckets[i+1]
			if math.IsInf(upper, 1) {
				upper = buckets[i]
			}
			return time.Duration(upper * float64(time.Second))
		}
	}
	return 0
}
