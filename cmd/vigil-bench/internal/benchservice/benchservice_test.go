package benchservice_test

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
)

func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

// TestPercentile checks the nearest rank: the smallest value that at least
// q of them do not exceed.
func TestPercentile(t *testing.T) {
	t.Parallel()
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2), 0.5, 1 * time.Millisecond},
		{ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.99, 4 * time.Millisecond},
		{ms(1, 2, 3, 4), 0, 1 * time.Millisecond},
		{hundred, 0.50, 50 * time.Millisecond},
		{hundred, 0.99, 99 * time.Millisecond},
		{hundred, 1, 100 * time.Millisecond},
	} {
		assert.Equal(t, tc.want, benchservice.Percentile(tc.sorted, tc.q), "%v q=%v", tc.sorted, tc.q)
	}
}

// TestMedian checks odd and even counts and that the input stays as it was.
func TestMedian(t *testing.T) {
	t.Parallel()
	xs := []float64{3, 1, 2}
	assert.InDelta(t, 2.0, benchservice.Median(xs), 0)
	assert.Equal(t, []float64{3, 1, 2}, xs)
	assert.InDelta(t, 2.5, benchservice.Median([]float64{4, 1, 3, 2}), 0)
	assert.InDelta(t, 0.0, benchservice.Median(nil), 0)
}

// TestMedianInterval checks the order statistics the interval takes for a
// few counts (x(4) and x(12) of 15, x(14) and x(27) of 40 at 95%), the
// counts too small for a confidence, and that the input stays as it was.
func TestMedianInterval(t *testing.T) {
	t.Parallel()
	ranks := func(n int) []float64 { // n, n-1, ..., 1: unsorted on purpose
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(n - i)
		}
		return xs
	}
	for _, tc := range []struct {
		n      int
		conf   float64
		lo, hi float64
		ok     bool
	}{
		{n: 0, conf: 0.95},
		{n: 5, conf: 0.95}, // even min-max covers only 1-2/32 < 95%
		{n: 6, conf: 0.95, lo: 1, hi: 6, ok: true},
		{n: 15, conf: 0.95, lo: 4, hi: 12, ok: true},
		{n: 15, conf: 0.5, lo: 6, hi: 10, ok: true},
		{n: 40, conf: 0.95, lo: 14, hi: 27, ok: true},
		{n: 15, conf: 0},
		{n: 15, conf: 1},
	} {
		xs := ranks(tc.n)
		lo, hi, ok := benchservice.MedianInterval(xs, tc.conf)
		assert.Equal(t, tc.ok, ok, "n=%d conf=%v", tc.n, tc.conf)
		assert.InDelta(t, tc.lo, lo, 0, "n=%d conf=%v", tc.n, tc.conf)
		assert.InDelta(t, tc.hi, hi, 0, "n=%d conf=%v", tc.n, tc.conf)
		assert.Equal(t, ranks(tc.n), xs, "input modified")
	}
}

// TestMedianIntervalCovers draws samples of 15 from a skewed distribution
// whose median is known (exponential: ln 2) and checks that the 95%
// interval covers it about as often as it promises (96.5% for 15), not
// much more (an interval too wide) nor less.
func TestMedianIntervalCovers(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 4000
	covered := 0
	for range trials {
		xs := make([]float64, 15)
		for i := range xs {
			xs[i] = rng.ExpFloat64()
		}
		lo, hi, ok := benchservice.MedianInterval(xs, 0.95)
		require.True(t, ok)
		if lo <= math.Ln2 && math.Ln2 <= hi {
			covered++
		}
	}
	assert.InDelta(t, 0.965, float64(covered)/trials, 0.015, "covered %d of %d", covered, trials)
}

// TestSummarize checks the median of the rounds' rates, the pooled
// percentiles, the CPU time per request, the server's and the load
// generator's, and the share of the CPUs' time stolen.
func TestSummarize(t *testing.T) {
	t.Parallel()
	s := benchservice.Summarize([]benchservice.Round{
		{Latencies: ms(1, 2), Elapsed: time.Second, CPU: 30 * time.Millisecond, LoadCPU: 9 * time.Millisecond, Steal: 60 * time.Millisecond},
		{Latencies: ms(3, 4, 5, 6), Elapsed: time.Second, CPU: 20 * time.Millisecond, LoadCPU: 18 * time.Millisecond},
		{Latencies: ms(7, 8, 9), Elapsed: time.Second, CPU: 40 * time.Millisecond, Steal: 240 * time.Millisecond},
	}, 2)
	assert.Equal(t, []float64{2, 4, 3}, s.Rates)
	assert.InDelta(t, 3.0, s.Rate, 0)
	assert.Equal(t, 9, s.Requests)
	assert.Equal(t, 5*time.Millisecond, s.P50)
	assert.Equal(t, 9*time.Millisecond, s.P99)
	assert.Equal(t, 10*time.Millisecond, s.CPUPerReq)
	assert.Equal(t, 3*time.Millisecond, s.LoadCPUPerReq)
	assert.InDelta(t, 0.05, s.Steal, 1e-9, "300 ms stolen of 3 s on 2 CPUs")
}

// TestParseSteal reads the eighth figure of the cpu line, in ticks of
// 10 ms, and rejects a file without one.
func TestParseSteal(t *testing.T) {
	t.Parallel()
	d, ok := benchservice.ParseSteal([]byte("cpu  2872670 880 541226 3211467 74769 0 125092 412576 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"))
	require.True(t, ok)
	assert.Equal(t, 4125760*time.Millisecond, d)
	_, ok = benchservice.ParseSteal([]byte("cpu0 1 2 3 4 5 6 7 8\nintr 5\n"))
	assert.False(t, ok, "no cpu line")
	_, ok = benchservice.ParseSteal([]byte("cpu  1 2 3 4\n"))
	assert.False(t, ok, "a kernel without the steal figure")
}

// TestParseVMRSS reads the kB figure and rejects a file without one.
func TestParseVMRSS(t *testing.T) {
	t.Parallel()
	status := "Name:\tvigil\nVmPeak:\t 1000 kB\nVmRSS:\t   20480 kB\nRssAnon:\t 100 kB\n"
	rss, ok := benchservice.ParseVMRSS([]byte(status))
	require.True(t, ok)
	assert.Equal(t, int64(20480*1024), rss)
	for _, bad := range []string{"", "Name:\tx\n", "VmRSS:\t12 MB\n", "VmRSS:\tx kB\n"} {
		_, ok := benchservice.ParseVMRSS([]byte(bad))
		assert.False(t, ok, "%q", bad)
	}
}

// TestPeakRSS touches 64 MiB, gives it back to the kernel, and checks that
// the peak still counts it until ResetPeakRSS brings it down to the
// current size.
func TestPeakRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pid := os.Getpid()
	touch(64 << 20)
	debug.FreeOSMemory()
	before, ok := benchservice.PeakRSSOf(pid)
	require.True(t, ok)
	rss, ok := benchservice.RSSOf(pid)
	require.True(t, ok)
	require.Greater(t, before-rss, int64(32<<20), "the 64 MiB are in the peak, not in the current size")
	require.NoError(t, benchservice.ResetPeakRSS(pid))
	after, ok := benchservice.PeakRSSOf(pid)
	require.True(t, ok)
	assert.Less(t, after, before-32<<20)
}

// touch allocates n bytes and writes to each page of them.
func touch(n int) {
	big := make([]byte, n)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	runtime.KeepAlive(big)
}

// TestFormats checks the number formats of the report.
func TestFormats(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "0", benchservice.Thousands(0))
	assert.Equal(t, "999", benchservice.Thousands(999))
	assert.Equal(t, "1,000", benchservice.Thousands(1000))
	assert.Equal(t, "-1,234,567", benchservice.Thousands(-1234567))
	assert.Equal(t, "1,234.5 µs", benchservice.Micros(1234500*time.Nanosecond))
	assert.Equal(t, "0.1 µs", benchservice.Micros(60*time.Nanosecond))
	assert.Equal(t, "1.24 ms", benchservice.Millis(1235500*time.Nanosecond))
	assert.Equal(t, "0.50×", benchservice.Ratio(1, 2))
	assert.Equal(t, "-", benchservice.Ratio(1, 0))
	assert.Equal(t, "1.5 MiB", benchservice.MiB(3<<19))
}

// TestWriteWorkload checks that the table has a row per server and the
// ratios.
func TestWriteWorkload(t *testing.T) {
	t.Parallel()
	floor := benchservice.Summary{Rates: []float64{1000, 2000}, Rate: 2000, P50: time.Millisecond, P99: 2 * time.Millisecond, CPUPerReq: 10 * time.Microsecond, LoadCPUPerReq: 20 * time.Microsecond, Requests: 3000, Steal: 0.015}
	vigil := benchservice.Summary{Rates: []float64{1000}, Rate: 1000, P50: 2 * time.Millisecond, P99: 6 * time.Millisecond, CPUPerReq: 30 * time.Microsecond, LoadCPUPerReq: 25 * time.Microsecond, Requests: 1000, Steal: 0.12}
	var b strings.Builder
	require.NoError(t, benchservice.WriteWorkload(&b, "title", [2]string{"floor", "vigil+jwt"}, floor, vigil))
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	require.Len(t, lines, 7, b.String())
	assert.Equal(t, "title", lines[0])
	assert.Contains(t, lines[2], "2,000")
	assert.Contains(t, lines[2], "1,000  2,000")
	assert.Contains(t, lines[2], "20.0 µs")
	assert.Contains(t, lines[3], "vigil+jwt")
	assert.Regexp(t, `vigil\+jwt/floor\s+0\.50×\s+2\.00×\s+3\.00×\s+3\.00×\s+1\.25×`, lines[4])
	assert.Regexp(t, `paired\s+1\.00×\s+median of the 1 round ratios \(1\.00-1\.00\)\s*$`, lines[5], "no interval from one round")
	assert.Regexp(t, `^steal\s+1\.5% of the CPUs' time in floor's rounds, 12\.0% in vigil\+jwt's`, lines[6])

	// Six rounds or more: the paired line gives the interval of its median,
	// the 4th and 12th of fifteen ratios (0.56 and 0.88 here), not their
	// range.
	floor.Rates = make([]float64, 15)
	vigil.Rates = make([]float64, 15)
	for i := range floor.Rates {
		floor.Rates[i] = 100
		vigil.Rates[i] = float64(100 - 4*i) // 100, 96, ..., 44
	}
	b.Reset()
	require.NoError(t, benchservice.WriteWorkload(&b, "title", [2]string{"floor", "vigil"}, floor, vigil))
	lines = strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	require.Len(t, lines, 7, b.String())
	assert.Regexp(t, `paired\s+0\.72×\s+median of the 15 round ratios \(0\.44-1\.00\); 95% confidence interval of the median 0\.56-0\.88`, lines[5])
}

// TestPairedRatios pairs round i of one server with round i of the other,
// skipping rounds the other lacks or in which the first served nothing.
func TestPairedRatios(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []float64{0.5, 2, 1}, benchservice.PairedRatios([]float64{2, 1, 3, 4}, []float64{1, 2, 3}))
	assert.Equal(t, []float64{3}, benchservice.PairedRatios([]float64{0, 1}, []float64{5, 3}))
	assert.Empty(t, benchservice.PairedRatios(nil, []float64{1}))
	// The machine slows down over the rounds; the servers' ratio does not.
	slow, fast := []float64{1000, 500, 2000}, []float64{900, 450, 1800}
	assert.InDelta(t, 0.9, benchservice.Median(benchservice.PairedRatios(slow, fast)), 1e-9)
}

// TestResidentOfThisProcess: this process's memory reads whole, its
// resident set at least what it allocated and the files it maps, and its
// threads have been switched; a process that is gone reads nothing.
func TestResidentOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	r, ok := benchservice.ResidentOf(os.Getpid())
	require.True(t, ok)
	assert.Positive(t, r.Anon)
	assert.Positive(t, r.File)
	assert.GreaterOrEqual(t, r.RSS, r.Anon+r.File)
	assert.GreaterOrEqual(t, r.Peak, r.RSS)
	assert.Positive(t, benchservice.SwitchesOf(os.Getpid()))
	_, ok = benchservice.ResidentOf(1 << 30)
	assert.False(t, ok)
	assert.Zero(t, benchservice.SwitchesOf(1<<30))
}
