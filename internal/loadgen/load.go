package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// NewClient returns an HTTP client tuned for keep-alive: up to 64 idle
// connections to one host stay open, so that each of as many workers keeps
// its own. Call its CloseIdleConnections when done.
func NewClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}
}

// Post returns a POST of the JSON-RPC message body to url, accepting JSON
// and SSE as the Streamable HTTP transport requires.
func Post(url string, body []byte) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		panic(err) // the method is fixed; only a malformed url fails
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req
}

// Do sends req with client and reads the whole answer into buf (reset
// first). It fails unless the status is 200 and the body contains want.
func Do(client *http.Client, req *http.Request, buf *bytes.Buffer, want []byte) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), want) {
		return fmt.Errorf("%s: %s", resp.Status, buf.Bytes())
	}
	return nil
}

// Run sends n requests with client over workers goroutines and waits for
// them. newReq(w, i) builds worker w's request, the i-th of the run (i from
// 1 to n, each once: a unique JSON-RPC id). Each answer is checked as [Do]
// checks it; a worker stops at its first failure, and Run returns the
// failures joined. The latencies of the requests that succeeded come back
// sorted.
func Run(client *http.Client, workers int, n int64, want []byte, newReq func(worker int, i int64) *http.Request) ([]time.Duration, error) {
	return run(func(int) *http.Client { return client }, workers, n/int64(workers)+1, want, newReq, func(i int64, _ time.Time) bool { return i <= n }, nil)
}

// RunFor is [Run] for a duration instead of a count: the workers send
// requests (i from 1 up, each once) until d has passed since the start,
// and each finishes the request it has in flight then. The latencies of
// the requests that succeeded come back sorted; their number is the count
// of requests done.
func RunFor(client *http.Client, workers int, d time.Duration, want []byte, newReq func(worker int, i int64) *http.Request) ([]time.Duration, error) {
	deadline := time.Now().Add(d)
	return run(func(int) *http.Client { return client }, workers, 1024, want, newReq, func(_ int64, now time.Time) bool { return now.Before(deadline) }, nil)
}

// RunPaced is [RunFor] held to perSecond requests a second over all the
// workers: each waits for its turn before it starts a request (the wait
// is not in its latency), so that a server is measured at a given rate
// rather than at the most it can take. The turns start at once, one at a
// time; a turn that would come after d is not waited for, so that the
// run ends at d.
func RunPaced(client *http.Client, workers int, d time.Duration, perSecond float64, want []byte, newReq func(worker int, i int64) *http.Request) ([]time.Duration, error) {
	deadline := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	turns := rate.NewLimiter(rate.Limit(perSecond), 1)
	return run(func(int) *http.Client { return client }, workers, 1024, want, newReq, func(_ int64, now time.Time) bool { return now.Before(deadline) },
		func() bool { return turns.WaitN(ctx, 1) == nil })
}

// RunForEach is [RunFor] with a client per worker: worker w sends its
// requests with clients[w], so that each worker, given a transport of its
// own, keeps connections of its own, as separate client processes do.
func RunForEach(clients []*http.Client, d time.Duration, want []byte, newReq func(worker int, i int64) *http.Request) ([]time.Duration, error) {
	deadline := time.Now().Add(d)
	return run(func(w int) *http.Client { return clients[w] }, len(clients), 1024, want, newReq, func(_ int64, now time.Time) bool { return now.Before(deadline) }, nil)
}

// run is the loop of [Run], [RunFor], [RunPaced] and [RunForEach]: each
// worker w waits for its turn (when turn is not nil; it stops when turn
// reports there is none), takes the next
// index while more(i, now) holds, and sends with clientOf(w); capacity is
// the initial size of each worker's latency slice.
func run(clientOf func(worker int) *http.Client, workers int, capacity int64, want []byte, newReq func(worker int, i int64) *http.Request, more func(i int64, now time.Time) bool, turn func() bool) ([]time.Duration, error) {
	lat := make([][]time.Duration, workers)
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		lat[w] = make([]time.Duration, 0, capacity)
		client := clientOf(w)
		wg.Go(func() {
			var buf bytes.Buffer
			for {
				if turn != nil && !turn() {
					return
				}
				start := time.Now()
				i := next.Add(1)
				if !more(i, start) {
					return
				}
				if err := Do(client, newReq(w, i), &buf, want); err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], time.Since(start))
			}
		})
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	return all, errors.Join(errs...)
}

// Bench runs b.N requests with [Run], timing only them, and reports req/s,
// the p99 latency one client saw (p99-µs) and, where [ProcessCPU] can tell,
// the CPU time per request of the whole process, client and server
// together (cpu-µs/op): less sensitive than req/s to other load on the
// machine, and meaningful with a -benchtime of seconds.
func Bench(b *testing.B, client *http.Client, workers int, want []byte, newReq func(worker int, i int64) *http.Request) {
	b.Helper()
	b.ReportAllocs()
	cpu0, cpuOK := ProcessCPU()
	b.ResetTimer()
	lat, err := Run(client, workers, int64(b.N), want, newReq)
	b.StopTimer()
	cpu1, _ := ProcessCPU()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	if len(lat) > 0 {
		p99 := lat[min(len(lat)-1, len(lat)*99/100)]
		b.ReportMetric(float64(p99)/float64(time.Microsecond), "p99-µs")
	}
	if cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	}
}
