package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
	"github.com/vigil-mcp/vigil/internal/cputime"
	"github.com/vigil-mcp/vigil/internal/loadgen"
)

// clientsPerSession is how many overload clients share a session: far
// below the per-session in-flight limit.
const clientsPerSession = 8

// echoAnswer is in every successful echo answer of the overload phase.
const echoAnswer = `"content":[{"type":"text","text":"hello"}]`

// The acceptance thresholds of the overload phase.
const (
	minGoodputHonored = 0.9                    // of the peak, honoring Retry-After (issue 88; issue 45 asked 0.8)
	minGoodputIgnored = 0.5                    // of the peak, ignoring it
	maxAdmittedP99    = 100 * time.Millisecond // of the admitted requests
)

// overloadRound is what one round at one concurrency measured.
type overloadRound struct {
	ok        int64
	latencies []time.Duration // of the answers with the echo, sorted
	refused   int64           // 503 and 429
	rampShed  int64           // of those, refusals of calls sent in the ramp
	withRetry int64           // refusals that carried Retry-After
	failed    int64           // anything else: other statuses, JSON-RPC errors, transport errors
	firstFail string
	elapsed   time.Duration // the whole round, ramp included: refusals are counted over it
	measured  time.Duration // after the ramp: answers and latencies are counted over it
	serverCPU time.Duration // the server process's CPU time after the ramp
	clientCPU time.Duration // this process's (the clients') CPU time after the ramp
}

func (r overloadRound) goodput() float64 { return float64(r.ok) / r.measured.Seconds() }

func (r overloadRound) p99() time.Duration { return benchservice.Percentile(r.latencies, 0.99) }

// cpuPerAnswer is cpu over the answers counted after the ramp, refusals'
// cost included; 0 without answers.
func (r overloadRound) cpuPerAnswer(cpu time.Duration) time.Duration {
	if r.ok == 0 {
		return 0
	}
	return cpu / time.Duration(r.ok)
}

// retryColumn says whether the refusals carried Retry-After.
func (r overloadRound) retryColumn() string {
	switch {
	case r.refused == 0:
		return "-"
	case r.withRetry == r.refused:
		return "all"
	case r.withRetry == 0:
		return "none"
	}
	return fmt.Sprintf("%d of %d", r.withRetry, r.refused)
}

// mode is a client's behavior on a refusal: it honors Retry-After or
// ignores it.
type mode struct {
	name  string
	honor bool
}

// modes are the two behaviors, in the order the phase runs them.
func modes() []mode { return []mode{{"honor", true}, {"ignore", false}} }

// repsOf is how many reps the phase runs in mode m: reps honoring
// Retry-After, one ignoring it.
func repsOf(m mode, reps int) int {
	if m.honor {
		return reps
	}
	return 1
}

// overloadRun is one round of the phase's plan.
type overloadRun struct {
	mode    mode
	rep     int // from 0
	server  target
	clients int
}

// roundKey is a mode, level and server, whose rounds the phase runs once
// per rep.
type roundKey struct {
	mode    string
	clients int
	server  string
}

// String is the key as the report names it: "honor/2048/vigil".
func (k roundKey) String() string { return fmt.Sprintf("%s/%d/%s", k.mode, k.clients, k.server) }

// alternate returns xs as they are in even reps (from 0) and reversed in
// odd ones: a level's round runs as far after its rep's peak round in one
// rep as before it in the next, and each server runs first in turn.
func alternate[T any](xs []T, rep int) []T {
	ys := slices.Clone(xs)
	if rep%2 == 1 {
		slices.Reverse(ys)
	}
	return ys
}

// overloadPlan returns the phase's rounds in the order they run: each
// mode's reps (repsOf) in turn, and in each rep every server's rounds at
// every level back to back, the servers and the levels in alternate's
// order for the rep. A level's round and its rep's peak round, the same
// server's, are thus never more than len(levels) rounds apart.
func overloadPlan(levels []int, servers []target, reps int) []overloadRun {
	var plan []overloadRun
	for _, m := range modes() {
		for rep := range repsOf(m, reps) {
			for _, t := range alternate(servers, rep) {
				for _, c := range alternate(levels, rep) {
					plan = append(plan, overloadRun{mode: m, rep: rep, server: t, clients: c})
				}
			}
		}
	}
	return plan
}

// levelSummary is one server's rounds at one level in one mode, one per
// rep, against the same reps' peak rounds.
type levelSummary struct {
	goodput, refusedPerSecond float64       // medians over the reps
	p99                       time.Duration // the median of the reps' p99s
	cpu, clientCPU            time.Duration // per answer, medians over the reps
	ofPeak                    []float64     // each rep's goodput over its peak round's, in rep order
	sum                       overloadRound // refused, withRetry and failed over the reps
}

// summarize returns the summary of rounds, one per rep, where peaks are
// the same server's rounds at the peak's level in the same mode and reps.
func summarize(rounds, peaks []overloadRound) levelSummary {
	var s levelSummary
	var goodput, refused, p99, cpu, clientCPU []float64
	for i, r := range rounds {
		goodput = append(goodput, r.goodput())
		refused = append(refused, float64(r.refused)/r.elapsed.Seconds())
		p99 = append(p99, float64(r.p99()))
		cpu = append(cpu, float64(r.cpuPerAnswer(r.serverCPU)))
		clientCPU = append(clientCPU, float64(r.cpuPerAnswer(r.clientCPU)))
		s.ofPeak = append(s.ofPeak, ofPeak(r, peaks[i]))
		s.sum.refused += r.refused
		s.sum.withRetry += r.withRetry
		s.sum.failed += r.failed
	}
	s.goodput, s.refusedPerSecond = benchservice.Median(goodput), benchservice.Median(refused)
	s.p99 = time.Duration(benchservice.Median(p99))
	s.cpu, s.clientCPU = time.Duration(benchservice.Median(cpu)), time.Duration(benchservice.Median(clientCPU))
	return s
}

// ofPeak is r's goodput over peak's; 0 if peak has none.
func ofPeak(r, peak overloadRound) float64 {
	if peak.goodput() == 0 {
		return 0
	}
	return r.goodput() / peak.goodput()
}

// medianOfPeak is the median of the reps' ratios to their peaks, which
// the machine's drift between reps does not enter, unlike the ratio of
// the medians.
func (s levelSummary) medianOfPeak() float64 { return benchservice.Median(s.ofPeak) }

// spread formats the reps' ratios to their peaks and their median:
// "84%, 91%, 88% (median 88%)".
func (s levelSummary) spread() string {
	ps := make([]string, len(s.ofPeak))
	for i, p := range s.ofPeak {
		ps[i] = fmt.Sprintf("%.0f%%", 100*p)
	}
	return fmt.Sprintf("%s (median %.0f%%)", strings.Join(ps, ", "), 100*s.medianOfPeak())
}

// overload runs the overload phase and writes its report to w.
func overload(w io.Writer, cfg config) error {
	low, high := cfg.clients[0], cfg.clients[len(cfg.clients)-1]
	_, _ = fmt.Fprintf(w, "\noverload     tools/call echo {\"text\":\"hello\"} at %s concurrent clients, keep-alive, %s sessions\n", joinInts(cfg.clients), version)
	_, _ = fmt.Fprintf(w, "             (one per %d clients); %s per round; a %s warm-up on each server first\n", clientsPerSession, cfg.round, warmup(cfg))
	_, _ = fmt.Fprintf(w, "rounds       honor: %d reps; in each, one server's rounds at every level back to back, then the other's;\n", cfg.reps)
	_, _ = fmt.Fprintf(w, "             from one rep to the next the levels' order reverses and the other server goes first, so that\n")
	_, _ = fmt.Fprintf(w, "             a steady drift of the machine's speed favors a level in one rep as much as it penalizes it\n")
	_, _ = fmt.Fprintf(w, "             in the next; ignore: one rep, each server's levels back to back too\n")
	_, _ = fmt.Fprintf(w, "ramp         each round's first %s (every client connecting at once) is not measured: goodput and p99\n             are the steady state after it; refusals are counted over the whole round, the ramp's apart\n", rampOf(cfg.round))
	_, _ = fmt.Fprintf(w, "modes        honor: a client refused (503, 429) waits Retry-After before its next request;\n")
	_, _ = fmt.Fprintf(w, "             ignore: it retries at once\n")
	_, _ = fmt.Fprintf(w, "goodput      answers with the echo per second; p99 over those answers (admitted requests only); each\n")
	_, _ = fmt.Fprintf(w, "             figure is the median over the reps of the rep's; failed and Retry-After their sums\n")
	_, _ = fmt.Fprintf(w, "of peak      each rep's goodput over the same server's at %s clients in the same rep and mode; the\n", benchservice.Thousands(int64(low)))
	_, _ = fmt.Fprintf(w, "             median of those ratios, not the ratio of the medians; vigil/floor is the medians' ratio\n")
	_, _ = fmt.Fprintf(w, "CPU/answer   the server's CPU time after the ramp over its answers, refusals' cost included; the\n")
	_, _ = fmt.Fprintf(w, "             clients' the same for this process: the steady figure, where goodput moves with the machine\n")
	servers := []target{cfg.floor, cfg.vigil}
	nsess := (slices.Max(cfg.clients) + clientsPerSession - 1) / clientsPerSession
	sids := make(map[string][]string)
	for _, t := range servers {
		client := loadgen.NewClient()
		for range nsess {
			sid, err := loadgen.OpenSession(client, t.url, version)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			sids[t.name] = append(sids[t.name], sid)
		}
		client.CloseIdleConnections()
		runOverload(t, sids[t.name], low, true, warmup(cfg), "")
	}
	results := make(map[roundKey][]overloadRound) // in rep order: the plan runs each key's reps in turn
	for _, run := range overloadPlan(cfg.clients, servers, cfg.reps) {
		k := roundKey{run.mode.name, run.clients, run.server.name}
		results[k] = append(results[k], runOverload(run.server, sids[run.server.name], run.clients, run.mode.honor, cfg.round, ""))
	}
	summary := func(m string, clients int, server string) levelSummary {
		return summarize(results[roundKey{m, clients, server}], results[roundKey{m, low, server}])
	}
	tw := newTable(w)
	_, _ = fmt.Fprintf(tw, "mode\tclients\tserver\tgoodput/s\tp99\trefused/s\tRetry-After\tfailed\tof peak\tCPU/answer\tclients' CPU/answer\t\n")
	for _, m := range modes() {
		for _, c := range cfg.clients {
			var row [2]levelSummary
			for i, t := range servers {
				s := summary(m.name, c, t.name)
				row[i] = s
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%d\t%.0f%%\t%.1f µs\t%.1f µs\t\n", m.name, benchservice.Thousands(int64(c)), t.name,
					benchservice.Thousands(int64(s.goodput)), benchservice.Millis(s.p99), s.refusedPerSecond,
					s.sum.retryColumn(), s.sum.failed, 100*s.medianOfPeak(),
					float64(s.cpu)/1e3, float64(s.clientCPU)/1e3)
			}
			_, _ = fmt.Fprintf(tw, "\t\tvigil/floor\t%s\t%s\t\t\t\t\t\t\t\n", benchservice.Ratio(row[1].goodput, row[0].goodput), benchservice.Ratio(float64(row[1].p99), float64(row[0].p99)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range servers {
		_, _ = fmt.Fprintf(w, "%s at %s honoring, of each rep's peak: %s\n", t.name, benchservice.Thousands(int64(high)), summary("honor", high, t.name).spread())
	}
	for _, k := range slices.SortedFunc(maps.Keys(results), func(a, b roundKey) int { return strings.Compare(a.String(), b.String()) }) {
		for rep, r := range results[k] {
			if r.firstFail != "" {
				_, _ = fmt.Fprintf(w, "first failure %s, rep %d: %s\n", k, rep+1, r.firstFail)
			}
		}
	}
	honored, ignored := summary("honor", high, "vigil"), summary("ignore", high, "vigil")
	verdict(w, honored.medianOfPeak() >= minGoodputHonored, "overload at %s clients honoring Retry-After: goodput %.0f%% of the %s-client peak (≥ %.0f%%; the median of %d reps' ratios)",
		benchservice.Thousands(int64(high)), 100*honored.medianOfPeak(), benchservice.Thousands(int64(low)), 100*minGoodputHonored, cfg.reps)
	verdict(w, honored.p99 <= maxAdmittedP99, "overload at %s clients honoring Retry-After: p99 of admitted requests %s (≤ %s; the median of %d reps' p99s)",
		benchservice.Thousands(int64(high)), benchservice.Millis(honored.p99), benchservice.Millis(maxAdmittedP99), cfg.reps)
	var refused, withRetry, shedLow, rampShedLow int64
	var peaks int
	for k, rs := range results {
		if k.server != "vigil" {
			continue
		}
		for _, r := range rs {
			refused += r.refused
			withRetry += r.withRetry
			if k.clients == low {
				shedLow += r.refused - r.rampShed
				rampShedLow += r.rampShed
				peaks++
			}
		}
	}
	verdict(w, withRetry == refused, "overload: %d refusals counted, %d answered with Retry-After", refused, withRetry)
	// A peak round that follows a higher level's round (every other rep)
	// starts while the shedder still refuses the share that round needed:
	// until its next interval sees the queue gone. Its ramp's refusals
	// are that lag, and counted apart.
	verdict(w, shedLow == 0, "overload at %s clients: nothing shed after the ramp (%d refusals in %d rounds; %d in their ramps)", benchservice.Thousands(int64(low)), shedLow, peaks, rampShedLow)
	verdict(w, ignored.medianOfPeak() >= minGoodputIgnored, "overload at %s clients ignoring Retry-After: goodput %.0f%% of the peak ignoring it (≥ %.0f%%)",
		benchservice.Thousands(int64(high)), 100*ignored.medianOfPeak(), 100*minGoodputIgnored)
	return nil
}

// warmup is the length of each server's warm-up.
func warmup(cfg config) time.Duration { return min(cfg.round, time.Second) }

// rampOf is the start of a round of length d whose answers are not
// measured: every client opens its connection then, all at once, and the
// server's shedding has yet to find its level; the round's figures are
// those of the steady state after it. Refusals are counted throughout.
func rampOf(d time.Duration) time.Duration { return min(d/5, time.Second) }

// runOverload runs clients concurrent clients on t for d, client i in
// session sids[i%len], each on a keep-alive connection of its own from
// the local address local ("": any); the answers of the first rampOf(d)
// are not measured.
func runOverload(t target, sids []string, clients int, honor bool, d time.Duration, local string) overloadRound {
	rounds := make([]overloadRound, clients)
	start := time.Now()
	from, deadline := start.Add(rampOf(d)), start.Add(d)
	var server0, client0 time.Duration
	ramped := make(chan struct{})
	ramp := time.AfterFunc(rampOf(d), func() {
		server0, _ = loadgen.CPUOf(t.pid)
		client0 = cputime.Process()
		close(ramped)
	})
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			k, err := newKeepAlive(t.url, sids[c%len(sids)], version, local)
			if err != nil {
				rounds[c].fail(err.Error())
				return
			}
			defer k.close()
			rounds[c] = overloadClient(k, int64(c)<<32, honor, from, deadline)
		})
	}
	wg.Wait()
	server1, _ := loadgen.CPUOf(t.pid)
	client1 := cputime.Process()
	if !ramp.Stop() {
		<-ramped
	}
	total := overloadRound{elapsed: time.Since(start), measured: time.Since(from), serverCPU: server1 - server0, clientCPU: client1 - client0}
	for _, r := range rounds {
		total.ok += r.ok
		total.latencies = append(total.latencies, r.latencies...)
		total.refused += r.refused
		total.rampShed += r.rampShed
		total.withRetry += r.withRetry
		total.failed += r.failed
		if total.firstFail == "" {
			total.firstFail = r.firstFail
		}
	}
	slices.Sort(total.latencies)
	return total
}

// overloadClient sends echo calls on k until deadline, one at a time,
// and counts how they were answered: answers and their latencies
// only for calls sent from from on, refusals and failures all. Its
// request ids count up from firstID + 1: clients sharing a session need
// ids of their own.
func overloadClient(k *keepAlive, firstID int64, honor bool, from, deadline time.Time) overloadRound {
	var r overloadRound
	var body bytes.Buffer
	call := make([]byte, 0, 128)
	want := []byte(echoAnswer)
	for id := firstID + 1; ; id++ {
		start := time.Now() // one reading for the deadline and the ramp: a call before from is never goodput
		if !start.Before(deadline) {
			break
		}
		resp, err := k.post(echoCall(call[:0], id), &body)
		switch {
		case err != nil:
			r.fail(err.Error())
		case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests:
			r.refused++
			if start.Before(from) {
				r.rampShed++
			}
			wait, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now())
			if ok {
				r.withRetry++
			}
			if honor && wait > 0 {
				time.Sleep(min(wait, time.Until(deadline)))
			}
		case resp.StatusCode == http.StatusOK && bytes.Contains(body.Bytes(), want):
			if start.Before(from) {
				continue // the ramp
			}
			r.ok++
			r.latencies = append(r.latencies, time.Since(start))
		default:
			r.fail(fmt.Sprintf("%s: %.200s", resp.Status, body.Bytes()))
		}
	}
	return r
}

func (r *overloadRound) fail(what string) {
	r.failed++
	if r.firstFail == "" {
		r.firstFail = what
	}
}

// echoCall appends the tools/call echo request with the given id to b.
func echoCall(b []byte, id int64) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`...)
}

// retryAfter reads a Retry-After header (RFC 9110: delay-seconds or an
// HTTP-date) as a wait from now; false if it is missing or malformed.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// joinInts formats ns as "32, 512 and 2,048".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = benchservice.Thousands(int64(n))
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
