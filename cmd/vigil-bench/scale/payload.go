package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
	"github.com/vigil-mcp/vigil/internal/loadgen"
)

// payloadSlack is the bound's allowance beyond two copies of each payload
// in flight.
const payloadSlack = 16 << 20

// payloadResult is what the payload phase measured on one server.
type payloadResult struct {
	calls     int64
	latencies []time.Duration // sorted
	elapsed   time.Duration
	start     int64 // VmRSS at the start
	peak      int64 // VmHWM at the end, reset at the start
	failed    int64
	firstFail string
}

func (r payloadResult) rate() float64 { return float64(r.calls) / r.elapsed.Seconds() }

// bound is the most RSS the issue allows: the start, two copies of each
// payload in flight and payloadSlack.
func (r payloadResult) bound(cfg config) int64 {
	return r.start + 2*int64(cfg.payloadBytes)*int64(cfg.payloadClients) + payloadSlack
}

// payload runs the payload phase and writes its report to w.
func payload(w io.Writer, cfg config) error {
	size := benchservice.Thousands(int64(cfg.payloadBytes))
	_, _ = fmt.Fprintf(w, "\npayload      tools/call echo with a text of %s bytes, %d concurrent clients (a session each), %s per server\n", size, cfg.payloadClients, cfg.round)
	_, _ = fmt.Fprintf(w, "RSS          VmRSS at the start; peak: VmHWM at the end, reset at the start (/proc/<pid>/clear_refs)\n")
	_, _ = fmt.Fprintf(w, "bound        start + 2 × %s bytes × %d + 16 MiB\n", size, cfg.payloadClients)
	var res [2]payloadResult
	for i, t := range []target{cfg.floor, cfg.vigil} {
		r, err := measurePayload(t, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		res[i] = r
	}
	tw := newTable(w)
	_, _ = fmt.Fprintf(tw, "server\tcalls/s\tp99\tfailed\tRSS at start\tpeak RSS\tbound\twithin\t\n")
	for i, t := range []target{cfg.floor, cfg.vigil} {
		r := res[i]
		_, _ = fmt.Fprintf(tw, "%s\t%.1f\t%s\t%d\t%s\t%s\t%s\t%t\t\n", t.name, r.rate(), benchservice.Millis(benchservice.Percentile(r.latencies, 0.99)), r.failed,
			benchservice.MiB(r.start), benchservice.MiB(r.peak), benchservice.MiB(r.bound(cfg)), r.peak <= r.bound(cfg))
	}
	floor, vigil := res[0], res[1]
	_, _ = fmt.Fprintf(tw, "vigil/floor\t%s\t%s\t\t\t%s\t\t\t\n", benchservice.Ratio(vigil.rate(), floor.rate()),
		benchservice.Ratio(float64(benchservice.Percentile(vigil.latencies, 0.99)), float64(benchservice.Percentile(floor.latencies, 0.99))),
		benchservice.Ratio(float64(vigil.peak-vigil.start), float64(floor.peak-floor.start)))
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, t := range []target{cfg.floor, cfg.vigil} {
		if res[i].firstFail != "" {
			_, _ = fmt.Fprintf(w, "first failure %s: %s\n", t.name, res[i].firstFail)
		}
	}
	what := fmt.Sprintf("%s-byte echo at %d clients", size, cfg.payloadClients)
	verdict(w, vigil.peak <= vigil.bound(cfg), "%s: peak RSS %s ≤ start + 2 × payload × clients + 16 MiB = %s", what, benchservice.MiB(vigil.peak), benchservice.MiB(vigil.bound(cfg)))
	verdict(w, vigil.failed == 0 && vigil.rate() >= floor.rate(), "%s: calls/s %s the floor's (≥ 1×)", what, benchservice.Ratio(vigil.rate(), floor.rate()))
	return nil
}

// measurePayload opens a session per client on t, resets t's peak RSS and
// runs the clients for cfg.round.
func measurePayload(t target, cfg config) (payloadResult, error) {
	var r payloadResult
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.payloadClients}}
	defer client.CloseIdleConnections()
	sids := make([]string, cfg.payloadClients)
	for i := range sids {
		var err error
		if sids[i], err = loadgen.OpenSession(client, t.url, version); err != nil {
			return r, err
		}
	}
	text := strings.Repeat("a", cfg.payloadBytes)
	call := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}}}`)
	want := []byte(`"text":"` + text[:min(len(text), 64)])
	var ok bool
	if r.start, ok = benchservice.RSSOf(t.pid); !ok {
		return r, fmt.Errorf("cannot read /proc/%d/status", t.pid)
	}
	if err := benchservice.ResetPeakRSS(t.pid); err != nil {
		return r, fmt.Errorf("resetting the peak RSS: %w", err)
	}
	results := make([]payloadResult, cfg.payloadClients)
	start := time.Now()
	deadline := start.Add(cfg.round)
	var wg sync.WaitGroup
	for c := range results {
		wg.Go(func() {
			res := &results[c]
			var body bytes.Buffer
			for time.Now().Before(deadline) {
				begin := time.Now()
				// The body is shared by the clients: each request reads it afresh.
				err := loadgen.Do(client, loadgen.SessionPost(t.url, sids[c], version, call), &body, want)
				if err == nil && body.Len() < len(text) {
					err = fmt.Errorf("answer of %d bytes", body.Len())
				}
				if err != nil {
					res.failed++
					if res.firstFail == "" {
						res.firstFail = fmt.Sprintf("%.200s", err.Error())
					}
					continue
				}
				res.calls++
				res.latencies = append(res.latencies, time.Since(begin))
			}
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	if r.peak, ok = benchservice.PeakRSSOf(t.pid); !ok {
		return r, fmt.Errorf("cannot read /proc/%d/status", t.pid)
	}
	for _, c := range results {
		r.calls += c.calls
		r.latencies = append(r.latencies, c.latencies...)
		r.failed += c.failed
		if r.firstFail == "" {
			r.firstFail = c.firstFail
		}
	}
	slices.Sort(r.latencies)
	return r, nil
}
