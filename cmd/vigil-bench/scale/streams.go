package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
	"github.com/vigil-mcp/vigil/internal/loadgen"
)

// openers is how many sessions and streams are opened at once.
const openers = 16

// sessionsPerAddress is how many sessions and streams come from one
// loopback source address, well under the per-caller session quota (the
// caller is the client's address): so that one load generator stands for
// many clients on any server, whatever its flags.
const sessionsPerAddress = 500

// sourceAddr returns the loopback address session i comes from: 127.1.0.1
// for the first sessionsPerAddress, then 127.1.0.2, and so on.
func sourceAddr(i int) *net.TCPAddr {
	a := i/sessionsPerAddress + 1
	return &net.TCPAddr{IP: net.IPv4(127, 1, byte(a>>8), byte(a))}
}

// fanoutTimeout is how long one fan-out may take before the phase fails.
const fanoutTimeout = time.Minute

// trigger is the call that makes the server send list_changed to every
// session.
const trigger = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{}}}`

// streamsResult is what the streams phase measured on one server.
type streamsResult struct {
	rss0, rss1, rss2 int64           // before opening, after opening, after the fan-outs
	peak1            int64           // VmHWM after opening: the most the opening held at once
	fanouts          []time.Duration // each fan-out's time, sorted
	cpu              time.Duration   // the server's CPU time over the fan-outs
	opening          time.Duration
	short            int // streams that did not get every fan-out exactly once
}

// streams measures the streams phase on the floor and on vigil, one after
// the other, and writes the report to w.
func streams(w io.Writer, cfg config) error {
	n := cfg.sessions
	_, _ = fmt.Fprintf(w, "\nstreams      %s sessions (%s), each with its standalone GET SSE stream open; %d fan-outs of\n", benchservice.Thousands(int64(n)), version, cfg.fanouts)
	_, _ = fmt.Fprintf(w, "             notifications/tools/list_changed (tools/call test_trigger_tool_change from one more session)\n")
	_, _ = fmt.Fprintf(w, "sources      %d sessions and streams from each loopback address from 127.1.0.1 up, under the\n", sessionsPerAddress)
	_, _ = fmt.Fprintf(w, "             per-caller session quota, as from many clients\n")
	_, _ = fmt.Fprintf(w, "RSS          VmRSS growth / sessions, %s after opening them and after the fan-outs\n", cfg.settle)
	_, _ = fmt.Fprintf(w, "fan-out      from the call sent until the last stream has the event: median (min-max) of the fan-outs\n")
	_, _ = fmt.Fprintf(w, "CPU          the server's utime+stime over the fan-outs / (sessions × fan-outs)\n")
	var res [2]streamsResult
	for i, t := range []target{cfg.floor, cfg.vigil} {
		r, err := measureStreams(t, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		res[i] = r
	}
	floor, vigil := res[0], res[1]
	per := func(r streamsResult, rss int64) float64 { return float64(rss-r.rss0) / float64(n) }
	cpuPer := func(r streamsResult) float64 { return float64(r.cpu) / float64(n*cfg.fanouts) }
	median := func(r streamsResult) time.Duration { return r.fanouts[len(r.fanouts)/2] }
	tw := newTable(w)
	_, _ = fmt.Fprintf(tw, "\t\tfloor\tvigil\tvigil/floor\t\n")
	_, _ = fmt.Fprintf(tw, "\tRSS per session+stream\t%s\t%s\t%s\t\n", kib(per(floor, floor.rss1)), kib(per(vigil, vigil.rss1)), benchservice.Ratio(per(vigil, vigil.rss1), per(floor, floor.rss1)))
	_, _ = fmt.Fprintf(tw, "\tafter %d fan-outs\t%s\t%s\t%s\t\n", cfg.fanouts, kib(per(floor, floor.rss2)), kib(per(vigil, vigil.rss2)), benchservice.Ratio(per(vigil, vigil.rss2), per(floor, floor.rss2)))
	_, _ = fmt.Fprintf(tw, "\tVmRSS after opening\t%s\t%s\t\t\n", benchservice.MiB(floor.rss1), benchservice.MiB(vigil.rss1))
	_, _ = fmt.Fprintf(tw, "\tpeak while opening (VmHWM)\t%s\t%s\t\t\n", benchservice.MiB(floor.peak1), benchservice.MiB(vigil.peak1))
	_, _ = fmt.Fprintf(tw, "\tfan-out time\t%s\t%s\t%s\t\n", benchservice.Millis(median(floor)), benchservice.Millis(median(vigil)), benchservice.Ratio(float64(median(vigil)), float64(median(floor))))
	_, _ = fmt.Fprintf(tw, "\tmin-max\t%s-%s\t%s-%s\t\t\n", benchservice.Millis(floor.fanouts[0]), benchservice.Millis(slices.Max(floor.fanouts)), benchservice.Millis(vigil.fanouts[0]), benchservice.Millis(slices.Max(vigil.fanouts)))
	_, _ = fmt.Fprintf(tw, "\tCPU per notified session\t%s\t%s\t%s\t\n", benchservice.Micros(time.Duration(cpuPer(floor))), benchservice.Micros(time.Duration(cpuPer(vigil))), benchservice.Ratio(cpuPer(vigil), cpuPer(floor)))
	_, _ = fmt.Fprintf(tw, "\topening the sessions and streams\t%.1fs\t%.1fs\t\t\n", floor.opening.Seconds(), vigil.opening.Seconds())
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range []struct {
		t target
		r streamsResult
	}{{cfg.floor, floor}, {cfg.vigil, vigil}} {
		if p.r.short == 0 {
			_, _ = fmt.Fprintf(w, "delivered    %s: every stream got every fan-out, once\n", p.t.name)
		} else {
			_, _ = fmt.Fprintf(w, "delivered    %s: %d of %d streams did not get every fan-out exactly once\n", p.t.name, p.r.short, n)
		}
	}
	at := benchservice.Thousands(int64(n))
	// A floor's CPU time under the 10 ms tick measures nothing: FAIL, "-".
	verdict(w, vigil.short == 0 && floor.cpu > 0 && cpuPer(vigil) <= 1.1*cpuPer(floor), "fan-out to %s streams: server CPU per notified session %s the floor's (≤ 1.1×)", at, benchservice.Ratio(cpuPer(vigil), cpuPer(floor)))
	verdict(w, vigil.short == 0 && float64(median(vigil)) <= 1.2*float64(median(floor)), "fan-out to %s streams: time until the last client has it %s the floor's (≤ 1.2×)", at, benchservice.Ratio(float64(median(vigil)), float64(median(floor))))
	verdict(w, per(vigil, vigil.rss1) <= 1.1*per(floor, floor.rss1), "RSS per session + stream at %s: %s the floor's (≤ 1.1×)", at, benchservice.Ratio(per(vigil, vigil.rss1), per(floor, floor.rss1)))
	verdict(w, per(vigil, vigil.rss2) <= 1.15*per(floor, floor.rss2), "RSS per session + stream at %s after %d fan-outs: %s the floor's (≤ 1.15×)", at, cfg.fanouts, benchservice.Ratio(per(vigil, vigil.rss2), per(floor, floor.rss2)))
	return nil
}

// measureStreams opens the sessions and streams on t, runs the fan-outs
// and closes the streams.
func measureStreams(t target, cfg config) (streamsResult, error) {
	var r streamsResult
	client := loadgen.NewClient()
	defer client.CloseIdleConnections()
	triggerSID, err := loadgen.OpenSession(client, t.url, version)
	if err != nil {
		return r, fmt.Errorf("the trigger's session: %w", err)
	}
	var ok bool
	if r.rss0, ok = benchservice.RSSOf(t.pid); !ok {
		return r, fmt.Errorf("cannot read /proc/%d/status", t.pid)
	}
	start := time.Now()
	set, err := openStreams(t.url, cfg.sessions)
	r.opening = time.Since(start)
	defer set.close()
	if err != nil {
		return r, err
	}
	time.Sleep(cfg.settle) // let the opening's garbage be collected
	r.rss1, _ = benchservice.RSSOf(t.pid)
	r.peak1, _ = benchservice.PeakRSSOf(t.pid) // the server started afresh for this phase
	cpu0, _ := loadgen.CPUOf(t.pid)
	var body bytes.Buffer
	for round := 1; round <= cfg.fanouts; round++ {
		set.expect(int64(round))
		start, err := sendTrigger(client, t.url, triggerSID, &body)
		if err != nil {
			return r, fmt.Errorf("fan-out %d: %w", round, err)
		}
		select {
		case last := <-set.done:
			r.fanouts = append(r.fanouts, last.Sub(start))
		case <-time.After(fanoutTimeout):
			return r, fmt.Errorf("fan-out %d: after %s, %d of %d streams have it (%d streams ended)",
				round, fanoutTimeout, set.reached(int64(round)), cfg.sessions, set.ended.Load())
		}
	}
	cpu1, _ := loadgen.CPUOf(t.pid)
	r.cpu = cpu1 - cpu0
	time.Sleep(cfg.settle)
	r.rss2, _ = benchservice.RSSOf(t.pid)
	r.short = set.short(int64(cfg.fanouts))
	slices.Sort(r.fanouts)
	return r, nil
}

// streamSet is the open GET streams of one server, each read by a
// goroutine of its own that counts the list_changed events it sees.
type streamSet struct {
	n      int64
	conns  []net.Conn
	seen   []atomic.Int64 // list_changed events per stream
	total  atomic.Int64   // over all streams
	target atomic.Int64   // the total that completes the current fan-out
	done   chan time.Time // when the total reached the target
	ended  atomic.Int64   // streams whose reading ended
	mu     sync.Mutex     // guards conns
	wg     sync.WaitGroup // the readers
	closed atomic.Bool
}

// openStreams opens n sessions at mcpURL, each with its standalone GET
// stream, openers at a time, session i from sourceAddr(i); on failure it
// returns the error with the streams it opened, which the caller closes.
func openStreams(mcpURL string, n int) (*streamSet, error) {
	s := &streamSet{n: int64(n), seen: make([]atomic.Int64, n), done: make(chan time.Time, 1)}
	u, err := url.Parse(mcpURL)
	if err != nil {
		return s, err
	}
	clients := make([]*http.Client, (n+sessionsPerAddress-1)/sessionsPerAddress)
	for a := range clients {
		dialer := &net.Dialer{LocalAddr: sourceAddr(a * sessionsPerAddress)}
		clients[a] = &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: openers}}
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	var next atomic.Int64
	errs := make([]error, openers)
	var wg sync.WaitGroup
	for o := range openers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				sid, err := loadgen.OpenSession(clients[int(i)/sessionsPerAddress], mcpURL, version)
				if err == nil {
					err = s.open(int(i), u, sid)
				}
				if err != nil {
					errs[o] = fmt.Errorf("session %d: %w", i, err)
					next.Store(int64(n)) // the others stop too
					return
				}
			}
		})
	}
	wg.Wait()
	return s, errors.Join(errs...)
}

// open opens stream i, the standalone GET stream of session sid, on a
// connection of its own, and starts its reader once the server has
// answered 200 with an event stream.
func (s *streamSet) open(i int, u *url.URL, sid string) error {
	conn, err := (&net.Dialer{LocalAddr: sourceAddr(i)}).Dial("tcp", u.Host)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.conns = append(s.conns, conn)
	s.mu.Unlock()
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n\r\n", u.RequestURI(), u.Host, sid, version)
	if _, err := io.WriteString(conn, req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		return fmt.Errorf("GET stream: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	s.wg.Go(func() { s.read(i, bufio.NewReaderSize(resp.Body, 256)) })
	return nil
}

// listChangedMethod marks the event the fan-outs send.
const listChangedMethod = `"notifications/tools/list_changed"`

// read counts the list_changed events of stream i until it ends: only
// data lines are looked at, and only for the method's name.
func (s *streamSet) read(i int, body *bufio.Reader) {
	defer s.ended.Add(1)
	for {
		line, err := body.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a long line: its start was looked at
		}
		if err != nil {
			return
		}
		if bytes.HasPrefix(line, []byte("data:")) && bytes.Contains(line, []byte(listChangedMethod)) {
			s.seen[i].Add(1)
			if s.total.Add(1) == s.target.Load() {
				select {
				case s.done <- time.Now():
				default: // a duplicate event: short reports it
				}
			}
		}
	}
}

// expect sets the fan-out that the next signal on done completes: round
// events on every stream.
func (s *streamSet) expect(round int64) { s.target.Store(round * s.n) }

// reached returns how many streams have at least round events.
func (s *streamSet) reached(round int64) int {
	k := 0
	for i := range s.seen {
		if s.seen[i].Load() >= round {
			k++
		}
	}
	return k
}

// short returns how many streams have other than want events.
func (s *streamSet) short(want int64) int {
	k := 0
	for i := range s.seen {
		if s.seen[i].Load() != want {
			k++
		}
	}
	return k
}

// close closes every stream's connection and waits for the readers.
func (s *streamSet) close() {
	if s.closed.Swap(true) {
		return
	}
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// sendTrigger calls test_trigger_tool_change and returns when the accepted
// call was sent. A call refused as overloaded (503) is sent again after its
// Retry-After, as a well-behaved client does, a few times at most: the
// fan-out is timed from the call that was accepted.
func sendTrigger(client *http.Client, endpoint, sid string, body *bytes.Buffer) (time.Time, error) {
	for try := 1; ; try++ {
		start := time.Now()
		req := loadgen.SessionPost(endpoint, sid, version, []byte(trigger))
		err := loadgen.Do(client, req, body, []byte(`"The tool list changed"`))
		if err == nil || try == 5 || !strings.HasPrefix(err.Error(), "503 ") {
			return start, err
		}
		time.Sleep(time.Second) // vigil's Retry-After
	}
}
