package benchservice

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the q-quantile (0 <= q <= 1) of sorted, ascending
// latencies, by the nearest-rank method: the smallest latency that at
// least q of them do not exceed. It returns 0 for no latencies.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted)) + 0.999999999) // ceil, robust to float error
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MedianInterval returns a confidence interval for the median of the
// distribution that xs are independent draws from: the order statistics
// x(k) and x(n+1-k) of the n values, with k the largest rank for which
// the chance that fewer than k draws fall below the median is at most
// (1-confidence)/2 (a Binomial(n, 1/2) tail). It assumes nothing of the
// distribution, and covers the median with at least the confidence asked.
// ok is false when xs are too few for that confidence (fewer than 6 for
// 0.95), or confidence is not strictly between 0 and 1.
func MedianInterval(xs []float64, confidence float64) (lo, hi float64, ok bool) {
	n := len(xs)
	if n == 0 || !(confidence > 0 && confidence < 1) {
		return 0, 0, false
	}
	tail := (1 - confidence) / 2
	k, cdf := 0, 0.0 // cdf: P(Binomial(n, 1/2) <= k-1)
	for ; k < n; k++ {
		next := cdf + math.Exp(logChoose(n, k)-float64(n)*math.Ln2)
		if next > tail {
			break
		}
		cdf = next
	}
	if k < 1 {
		return 0, 0, false
	}
	s := slices.Sorted(slices.Values(xs))
	return s[k-1], s[n-k], true
}

// logChoose returns the natural logarithm of n choose k.
func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// PairedRatios returns b[i]/a[i] for each round i that both have with a
// non-zero a[i]: with the rounds interleaved (a's round i just before b's),
// each ratio compares the two servers on the machine as it was then, so
// that their spread is that of the servers rather than of the machine's
// speed, which drifts from round to round.
func PairedRatios(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if a[i] != 0 {
			out = append(out, b[i]/a[i])
		}
	}
	return out
}

// Round is what one timed round against one server measured.
type Round struct {
	Latencies []time.Duration // of each request that succeeded, sorted
	Elapsed   time.Duration   // wall time of the round
	CPU       time.Duration   // the server process's utime+stime over the round
	LoadCPU   time.Duration   // the load generator's own utime+stime over the round
	Steal     time.Duration   // the machine's steal time over the round (MachineSteal), all CPUs
}

// Rate returns the round's requests per second.
func (r Round) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Latencies)) / r.Elapsed.Seconds()
}

// Summary is one server's figures over the rounds of one workload.
type Summary struct {
	Rates     []float64     // req/s of each round, in order
	Rate      float64       // their median
	P50, P99  time.Duration // over every request of every round
	CPUPerReq time.Duration // the server's CPU time over all rounds, per request
	// LoadCPUPerReq is the load generator's CPU time per request: on a
	// machine the two share, a slower server also costs its clients more
	// (they wait, park and are woken more often per request).
	LoadCPUPerReq time.Duration
	Requests      int // over all rounds
	// Steal is the share of the machine's CPU time, over the rounds, that
	// the hypervisor gave to other guests (see MachineSteal), given the
	// number of CPUs to Summarize.
	Steal float64
}

// Summarize returns the figures of rounds: the median of their req/s, the
// latency percentiles of their requests pooled, the server's CPU time per
// request over them all, the load generator's, and the share of the cpus
// CPUs' time stolen.
func Summarize(rounds []Round, cpus int) Summary {
	var s Summary
	var all []time.Duration
	var cpu, load, steal, elapsed time.Duration
	for _, r := range rounds {
		s.Rates = append(s.Rates, r.Rate())
		all = append(all, r.Latencies...)
		cpu += r.CPU
		load += r.LoadCPU
		steal += r.Steal
		elapsed += r.Elapsed
	}
	if elapsed > 0 && cpus > 0 {
		s.Steal = float64(steal) / (float64(elapsed) * float64(cpus))
	}
	slices.Sort(all)
	s.Rate = Median(s.Rates)
	s.P50 = Percentile(all, 0.50)
	s.P99 = Percentile(all, 0.99)
	s.Requests = len(all)
	if len(all) > 0 {
		s.CPUPerReq = cpu / time.Duration(len(all))
		s.LoadCPUPerReq = load / time.Duration(len(all))
	}
	return s
}
