package benchservice

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// pairedConfidence is the confidence of the interval WriteWorkload gives
// for the median of the paired ratios.
const pairedConfidence = 0.95

// WriteWorkload writes the table of one workload: per server, the median
// req/s and each round's, p50 and p99 latency, CPU time per request and
// the load generator's CPU time per request;
// then vigil's figures over the floor's, the median and range of the
// per-round req/s ratios (PairedRatios) with a 95% confidence interval of
// their median (MedianInterval): how far one run's figure may be from what
// more rounds would settle on, and the machine's steal time
// during each server's rounds. names are the two servers' names, the
// floor's first.
func WriteWorkload(w io.Writer, title string, names [2]string, floor, vigil Summary) error {
	if _, err := fmt.Fprintf(w, "%s\n", title); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintf(tw, "\tserver\treq/s\tp50\tp99\tCPU/req\tload CPU/req\trequests\t\tround req/s\t\n")
	for _, row := range []struct {
		name string
		s    Summary
	}{{names[0], floor}, {names[1], vigil}} {
		rates := make([]string, len(row.s.Rates))
		for i, r := range row.s.Rates {
			rates[i] = Thousands(int64(r + 0.5))
		}
		_, _ = fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t%s\t\n", row.name,
			Thousands(int64(row.s.Rate+0.5)), Millis(row.s.P50), Millis(row.s.P99),
			Micros(row.s.CPUPerReq), Micros(row.s.LoadCPUPerReq), Thousands(int64(row.s.Requests)), strings.Join(rates, "  "))
	}
	_, _ = fmt.Fprintf(tw, "\t%s/%s\t%s\t%s\t%s\t%s\t%s\t\n", names[1], names[0],
		Ratio(vigil.Rate, floor.Rate), Ratio(float64(vigil.P50), float64(floor.P50)),
		Ratio(float64(vigil.P99), float64(floor.P99)), Ratio(float64(vigil.CPUPerReq), float64(floor.CPUPerReq)),
		Ratio(float64(vigil.LoadCPUPerReq), float64(floor.LoadCPUPerReq)))
	if paired := PairedRatios(floor.Rates, vigil.Rates); len(paired) > 0 {
		interval := ""
		if lo, hi, ok := MedianInterval(paired, pairedConfidence); ok {
			interval = fmt.Sprintf("; %.0f%% confidence interval of the median %.2f-%.2f", 100*pairedConfidence, lo, hi)
		}
		_, _ = fmt.Fprintf(tw, "\tpaired\t%.2f×\t\t\t\t\t\t\tmedian of the %d round ratios (%.2f-%.2f)%s\t\n",
			Median(paired), len(paired), slices.Min(paired), slices.Max(paired), interval)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "steal        %.1f%% of the CPUs' time in %s's rounds, %.1f%% in %s's: taken by the hypervisor for other guests; over a few percent, the ratios are noise\n",
		100*floor.Steal, names[0], 100*vigil.Steal, names[1])
	return err
}

// Thousands formats n in decimal with commas between groups of three
// digits: 1234567 is "1,234,567".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Micros formats d in microseconds with one decimal: "1,234.5 µs".
func Micros(d time.Duration) string {
	tenths := (d + 50*time.Nanosecond) / (100 * time.Nanosecond)
	return fmt.Sprintf("%s.%d µs", Thousands(int64(tenths/10)), tenths%10)
}

// Millis formats d in milliseconds with two decimals: "1.23 ms".
func Millis(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// Ratio formats a/b as "0.42×", or "-" when b is 0.
func Ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// MiB formats bytes in mebibytes with one decimal: "12.3 MiB".
func MiB(bytes int64) string {
	return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20))
}
