package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
	"github.com/vigil-mcp/vigil/internal/loadgen"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The protocol versions of the two workloads.
const (
	version2025 = protocol.Version20250618
	version2026 = protocol.Version20260728
)

// meta2026 is the _meta every 2026-07-28 request carries.
const meta2026 = benchkit.Meta2026

// want is in every echo answer, the floor's and vigil's, of either era;
// -want replaces it for an upstream whose echo answers otherwise (the
// reference server-everything answers "Echo: hello").
var want = []byte(`"content":[{"type":"text","text":"hello"}]`)

// echoArguments are echo's arguments; -echo-arguments replaces them for an
// upstream whose echo takes others (server-everything's takes "message").
var echoArguments = `{"text":"hello"}`

// config is what the flags select.
type config struct {
	floorURL, vigilURL     string
	floorPID, vigilPID     int
	floorName, vigilName   string
	floorToken, vigilToken string // files of bearer tokens, one a line; "" for none
	vigilDPoPKey           string // file of the key vigil's tokens are bound to: DPoP with a proof per request
	clients, sessions      int
	rounds                 int
	round, warmup          time.Duration
	workloads              string
	idle, sample           int
	settle                 time.Duration
	debugRefresh           time.Duration // GET vigil's /debug/vigil this often during its rounds; 0: never
	paced                  float64       // > 0: both servers held to this share of the rate vigil reached in its warm-up
	rate                   float64       // > 0: both servers held to this many requests a second, warm-up included
	kernelCounts           bool          // count each server's context switches and system calls per call
}

func main() {
	var cfg config
	flag.StringVar(&cfg.floorURL, "floor", "", "`URL` of the floor's MCP endpoint")
	flag.IntVar(&cfg.floorPID, "floor-pid", 0, "`pid` of the floor's process, for its CPU time")
	flag.StringVar(&cfg.vigilURL, "vigil", "", "`URL` of vigil's MCP endpoint")
	flag.IntVar(&cfg.vigilPID, "vigil-pid", 0, "`pid` of vigil's process, for its CPU time and memory")
	flag.StringVar(&cfg.floorName, "floor-name", "floor", "`name` of the -floor server in the report")
	flag.StringVar(&cfg.vigilName, "vigil-name", "vigil", "`name` of the -vigil server in the report")
	flag.StringVar(&cfg.floorToken, "floor-tokens", "", "`file` of bearer tokens for the -floor server, one a line: client (and session) i sends token i mod n")
	flag.StringVar(&cfg.vigilToken, "vigil-tokens", "", "`file` of bearer tokens for the -vigil server, as -floor-tokens")
	flag.StringVar(&cfg.vigilDPoPKey, "vigil-dpop-key", "", "PEM PKCS #8 P-256 key `file` the -vigil-tokens are bound to: they are sent with the DPoP scheme and a fresh proof per request (RFC 9449)")
	flag.IntVar(&cfg.clients, "clients", 32, "concurrent clients")
	flag.IntVar(&cfg.sessions, "sessions", 8, "2025-06-18 sessions the clients share")
	flag.IntVar(&cfg.rounds, "rounds", 15, "timed rounds per server and workload")
	flag.DurationVar(&cfg.round, "round", time.Second, "length of a round")
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "untimed warm-up per server and workload")
	flag.StringVar(&cfg.workloads, "workloads", "2025,2026", "comma-separated workloads: 2025 (sessions), 2026 (stateless)")
	flag.IntVar(&cfg.idle, "idle", 0, "measure this many idle sessions on vigil instead of throughput (0: throughput)")
	flag.IntVar(&cfg.sample, "sample", 1000, "with -idle: sessions in which to call echo afterwards")
	flag.DurationVar(&cfg.settle, "settle", time.Second, "with -idle: how long to wait after opening the sessions before measuring vigil's memory again")
	flag.Float64Var(&cfg.paced, "paced", 0, "hold both servers to this `share` of the rate vigil reached in its warm-up (0.8, say), so that both are measured at one rate and one pattern of arrivals (without tokens; 0: each takes all the load it can)")
	flag.Float64Var(&cfg.rate, "rate", 0, "hold both servers to this many `requests a second`, warm-up included, the requests spaced evenly (without tokens; 0: see -paced)")
	flag.BoolVar(&cfg.kernelCounts, "kernel-counts", false, "report each server's context switches per call (/proc/<pid>/task/*/status) and system calls per call (perf stat, when it may trace here)")
	flag.StringVar(&echoArguments, "echo-arguments", echoArguments, "the `JSON` arguments of each echo call")
	flag.Func("want", "a `string` every echo answer contains (default: the floor's and vigil's answer to {\"text\":\"hello\"})", func(v string) error { want = []byte(v); return nil })
	flag.DurationVar(&cfg.debugRefresh, "debug-refresh", 0, "during vigil's rounds, GET its /debug/vigil this often, as a browser with the page open does (0: never)")
	flag.Parse()
	run := throughput
	if cfg.idle > 0 {
		run = idle
	}
	if err := run(os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// echoBody is the tools/call echo request with the given id; meta is the
// _meta object or "".
func echoBody(id int64, meta string) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":"echo","arguments":`...)
	b = append(b, echoArguments...)
	if meta != "" {
		b = append(b, `,"_meta":`...)
		b = append(b, meta...)
	}
	return append(b, "}}"...)
}

// statelessPost is the 2026-07-28 stateless tools/call echo request.
func statelessPost(url string, id int64) *http.Request {
	req := loadgen.Post(url, echoBody(id, meta2026))
	req.Header.Set("MCP-Protocol-Version", version2026)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	return req
}

// target is one server under load.
type target struct {
	name   string
	url    string
	pid    int
	client *http.Client
	// workers, with tokens, are the clients' own: each client sends its
	// token on keep-alive connections of its own, as a client process
	// does, not on connections pooled with other clients' (nil without
	// tokens: the clients share client's).
	workers []*http.Client
	sids    []string    // the 2025 workload's sessions
	tokens  []string    // bearer tokens: client or session i sends tokens[i%len]; none: no Authorization
	dpop    *dpopSigner // the tokens are DPoP-bound to its key; nil: Bearer
	rounds  []benchservice.Round
	kernel  kernelCounts // over the rounds, with -kernel-counts
}

// authorize gives req the bearer token of client or session i, if t has
// tokens, and returns it.
func (t *target) authorize(req *http.Request, i int) *http.Request {
	switch {
	case len(t.tokens) == 0:
	case t.dpop != nil:
		if err := t.dpop.authorize(req, t.tokens[i%len(t.tokens)]); err != nil {
			panic(err) // an ECDSA signature does not fail with a valid key
		}
	default:
		req.Header.Set("Authorization", "Bearer "+t.tokens[i%len(t.tokens)])
	}
	return req
}

// clientFor returns t's client, sending the bearer token of session i
// with every request when t has tokens.
func (t *target) clientFor(i int) *http.Client {
	if len(t.tokens) == 0 {
		return t.client
	}
	return &http.Client{Transport: bearer{base: t.client.Transport, token: t.tokens[i%len(t.tokens)], dpop: t.dpop}}
}

// runFor runs the load on t for d, through its clients' own connections
// when it has tokens; held to perSecond requests a second when it is
// above 0 (without tokens only).
func (t *target) runFor(clients int, d time.Duration, perSecond float64, want []byte, newReq func(int, int64) *http.Request) ([]time.Duration, error) {
	switch {
	case perSecond > 0 && len(t.tokens) > 0:
		return nil, errors.New("-paced is not for servers with tokens")
	case perSecond > 0:
		return loadgen.RunPaced(t.client, clients, d, perSecond, want, newReq)
	case len(t.tokens) == 0:
		return loadgen.RunFor(t.client, clients, d, want, newReq)
	}
	for len(t.workers) < clients {
		t.workers = append(t.workers, loadgen.NewClient())
	}
	return loadgen.RunForEach(t.workers[:clients], d, want, newReq)
}

// closeIdle closes t's idle connections.
func (t *target) closeIdle() {
	t.client.CloseIdleConnections()
	for _, c := range t.workers {
		c.CloseIdleConnections()
	}
}

// bearer adds an Authorization header to each request it sends.
type bearer struct {
	base  http.RoundTripper
	token string
	dpop  *dpopSigner // the token is DPoP-bound to its key; nil: Bearer
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if b.dpop != nil {
		if err := b.dpop.authorize(req, b.token); err != nil {
			return nil, err
		}
		return b.base.RoundTrip(req)
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(req)
}

// readTokens returns the non-empty lines of the file at path; none for "".
func readTokens(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tokens []string
	for line := range strings.Lines(string(raw)) {
		if line = strings.TrimSpace(line); line != "" {
			tokens = append(tokens, line)
		}
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return tokens, nil
}

// throughput runs the workloads of cfg against the floor and vigil and
// writes the report to w.
func throughput(w io.Writer, cfg config) error {
	if cfg.floorURL == "" || cfg.vigilURL == "" || cfg.floorPID <= 0 || cfg.vigilPID <= 0 {
		return errors.New("-floor, -floor-pid, -vigil and -vigil-pid are required")
	}
	if cfg.clients <= 0 || cfg.sessions <= 0 || cfg.rounds <= 0 || cfg.round <= 0 {
		return errors.New("-clients, -sessions, -rounds and -round must be positive")
	}
	_, _ = fmt.Fprintf(w, "load         tools/call echo {\"text\":\"hello\"}, %d concurrent clients, keep-alive, JSON responses\n", cfg.clients)
	_, _ = fmt.Fprintf(w, "             (Accept: application/json, text/event-stream), from a separate process (GOMAXPROCS %d)\n", runtime.GOMAXPROCS(0))
	if cfg.floorToken != "" || cfg.vigilToken != "" {
		_, _ = fmt.Fprintf(w, "connections  with tokens, each client on keep-alive connections of its own, as a client process is\n")
	}
	_, _ = fmt.Fprintf(w, "rounds       %d × %s per server, interleaved floor, vigil, floor, ...; %s warm-up per server first\n", cfg.rounds, cfg.round, cfg.warmup)
	if cfg.rate > 0 {
		_, _ = fmt.Fprintf(w, "rate         both servers held to %.0f req/s, warm-up included, the requests spaced evenly\n", cfg.rate)
	} else if cfg.paced > 0 {
		_, _ = fmt.Fprintf(w, "paced        both servers held to %.2f of the rate %s reached in its warm-up, the requests spaced evenly\n", cfg.paced, cfg.vigilName)
	}
	_, _ = fmt.Fprintf(w, "req/s        median of the rounds (each round's figure on the right)\n")
	_, _ = fmt.Fprintf(w, "p50, p99     over every request of the rounds, as the client saw it\n")
	_, _ = fmt.Fprintf(w, "CPU/req      the server process's utime+stime (/proc/<pid>/stat, 10 ms ticks) over the rounds / requests\n")
	_, _ = fmt.Fprintf(w, "load CPU/req the load generator's own, the same way: a slower server costs its clients more per request\n")
	_, _ = fmt.Fprintf(w, "steal        the machine's steal time (/proc/stat) during each server's rounds, over its CPUs' time\n")
	if cfg.debugRefresh > 0 {
		_, _ = fmt.Fprintf(w, "debug page   during %s's rounds, GET %s every %s (a browser with the page open)\n", cfg.vigilName, debugURL(cfg.vigilURL), cfg.debugRefresh)
	}
	floorTokens, err := readTokens(cfg.floorToken)
	if err != nil {
		return err
	}
	vigilTokens, err := readTokens(cfg.vigilToken)
	if err != nil {
		return err
	}
	vigilDPoP, err := readDPoPKey(cfg.vigilDPoPKey)
	if err != nil {
		return err
	}
	for wl := range strings.SplitSeq(cfg.workloads, ",") {
		floor := &target{name: cfg.floorName, url: cfg.floorURL, pid: cfg.floorPID, client: loadgen.NewClient(), tokens: floorTokens}
		vigil := &target{name: cfg.vigilName, url: cfg.vigilURL, pid: cfg.vigilPID, client: loadgen.NewClient(), tokens: vigilTokens, dpop: vigilDPoP}
		var title string
		var newReq func(t *target) func(w int, id int64) *http.Request
		switch strings.TrimSpace(wl) {
		case "2025":
			title = fmt.Sprintf("%s sessions: tools/call echo, %d clients on %d sessions", version2025, cfg.clients, cfg.sessions)
			for _, t := range []*target{floor, vigil} {
				for i := range cfg.sessions {
					sid, err := loadgen.OpenSession(t.clientFor(i), t.url, version2025)
					if err != nil {
						return fmt.Errorf("%s: %w", t.name, err)
					}
					t.sids = append(t.sids, sid)
				}
			}
			newReq = func(t *target) func(int, int64) *http.Request {
				return func(w int, id int64) *http.Request {
					s := w % len(t.sids)
					return t.authorize(loadgen.SessionPost(t.url, t.sids[s], version2025, echoBody(id, "")), s)
				}
			}
		case "2026":
			title = fmt.Sprintf("%s stateless: tools/call echo, %d clients, MCP-Protocol-Version, Mcp-Method, Mcp-Name and params._meta", version2026, cfg.clients)
			newReq = func(t *target) func(int, int64) *http.Request {
				return func(w int, id int64) *http.Request { return t.authorize(statelessPost(t.url, id), w) }
			}
		default:
			return fmt.Errorf("-workloads: unknown workload %q (want 2025 or 2026)", wl)
		}
		_, _ = fmt.Fprintf(w, "\n")
		perSecond := cfg.rate // the rate both are held to, with -rate or -paced
		for _, t := range []*target{floor, vigil} {
			start := time.Now()
			lat, err := t.runFor(cfg.clients, cfg.warmup, cfg.rate, want, newReq(t))
			if err != nil {
				return fmt.Errorf("%s warm-up: %w", t.name, err)
			}
			if t == vigil && cfg.paced > 0 && cfg.rate == 0 {
				perSecond = cfg.paced * float64(len(lat)) / time.Since(start).Seconds()
				_, _ = fmt.Fprintf(w, "paced        both held to %.0f req/s\n", perSecond)
			}
		}
		var page pageLoads
		for range cfg.rounds {
			for _, t := range []*target{floor, vigil} {
				var stopPage func() pageLoads
				if t == vigil && cfg.debugRefresh > 0 {
					stopPage = refreshPage(debugURL(cfg.vigilURL), cfg.debugRefresh)
				}
				var stopSyscalls func() int64
				var switches0 int64
				if cfg.kernelCounts {
					stopSyscalls = countSyscalls(t.pid)
					switches0 = benchservice.SwitchesOf(t.pid)
				}
				cpu0, ok0 := loadgen.CPUOf(t.pid)
				load0, _ := loadgen.CPUOf(os.Getpid())
				steal0, _ := benchservice.MachineSteal()
				start := time.Now()
				lat, err := t.runFor(cfg.clients, cfg.round, perSecond, want, newReq(t))
				elapsed := time.Since(start)
				cpu1, ok1 := loadgen.CPUOf(t.pid)
				load1, _ := loadgen.CPUOf(os.Getpid())
				steal1, _ := benchservice.MachineSteal()
				if stopPage != nil {
					page.add(stopPage())
				}
				if stopSyscalls != nil {
					t.kernel.add(benchservice.SwitchesOf(t.pid)-switches0, stopSyscalls(), int64(len(lat)))
				}
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				if !ok0 || !ok1 {
					return fmt.Errorf("%s: cannot read /proc/%d/stat", t.name, t.pid)
				}
				t.rounds = append(t.rounds, benchservice.Round{Latencies: lat, Elapsed: elapsed, CPU: cpu1 - cpu0, LoadCPU: load1 - load0, Steal: steal1 - steal0})
			}
		}
		floor.closeIdle()
		vigil.closeIdle()
		if err := benchservice.WriteWorkload(w, title, [2]string{floor.name, vigil.name}, benchservice.Summarize(floor.rounds, runtime.NumCPU()), benchservice.Summarize(vigil.rounds, runtime.NumCPU())); err != nil {
			return err
		}
		if cfg.kernelCounts {
			_, _ = fmt.Fprintf(w, "%14s  context switches per call %s, system calls per call %s\n", floor.name, floor.kernel.perCall(floor.kernel.switches), floor.kernel.perCall(floor.kernel.syscalls))
			_, _ = fmt.Fprintf(w, "%14s  context switches per call %s, system calls per call %s\n", vigil.name, vigil.kernel.perCall(vigil.kernel.switches), vigil.kernel.perCall(vigil.kernel.syscalls))
		}
		if cfg.debugRefresh > 0 {
			if err := page.write(w); err != nil {
				return err
			}
		}
	}
	return nil
}

// debugURL is the /debug/vigil page of the server whose MCP endpoint is
// mcpURL (without -admin-http, the same listener).
func debugURL(mcpURL string) string { return strings.TrimSuffix(mcpURL, "/mcp") + "/debug/vigil" }

// pageLoads are the GETs of the debug page during some rounds.
type pageLoads struct {
	took   []time.Duration
	failed int
	first  error
}

func (p *pageLoads) add(o pageLoads) {
	p.took = append(p.took, o.took...)
	p.failed += o.failed
	if p.first == nil {
		p.first = o.first
	}
}

func (p *pageLoads) write(w io.Writer) error {
	if len(p.took) == 0 && p.failed == 0 {
		return nil
	}
	slices.Sort(p.took)
	var median, slowest time.Duration
	if n := len(p.took); n > 0 {
		median, slowest = p.took[n/2], p.took[n-1]
	}
	_, err := fmt.Fprintf(w, "debug page   %d GETs during vigil's rounds, %d failed; median %s, slowest %s\n",
		len(p.took), p.failed, median.Round(10*time.Microsecond), slowest.Round(10*time.Microsecond))
	if err == nil && p.first != nil {
		_, err = fmt.Fprintf(w, "             first failure: %v\n", p.first)
	}
	return err
}

// refreshPage GETs url (the whole body, on a connection of its own, as a
// browser would) at once and then every period, until the returned stop
// is called; stop returns how the GETs went.
func refreshPage(url string, period time.Duration) (stop func() pageLoads) {
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	done := make(chan struct{})
	result := make(chan pageLoads, 1)
	go func() {
		defer client.CloseIdleConnections()
		var p pageLoads
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			start := time.Now()
			err := getPage(client, url)
			if err != nil {
				p.failed++
				if p.first == nil {
					p.first = err
				}
			} else {
				p.took = append(p.took, time.Since(start))
			}
			select {
			case <-done:
				result <- p
				return
			case <-tick.C:
			}
		}
	}()
	return func() pageLoads {
		close(done)
		return <-result
	}
}

func getPage(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// idle opens cfg.idle idle sessions on vigil, reports its memory per
// session, then calls echo in a sample of them, and writes the report to w.
func idle(w io.Writer, cfg config) error {
	if cfg.vigilURL == "" || cfg.vigilPID <= 0 {
		return errors.New("-vigil and -vigil-pid are required")
	}
	if cfg.clients <= 0 || cfg.sample < 0 {
		return errors.New("-clients must be positive and -sample not negative")
	}
	client := loadgen.NewClient()
	defer client.CloseIdleConnections()
	metricsURL := strings.TrimSuffix(cfg.vigilURL, "/mcp") + "/metrics"

	_, _ = fmt.Fprintf(w, "idle         %s sessions of %s: initialize, notifications/initialized, then nothing;\n", benchservice.Thousands(int64(cfg.idle)), version2025)
	_, _ = fmt.Fprintf(w, "             opened by %d concurrent clients sharing keep-alive connections (a session is an id)\n", cfg.clients)
	_, _ = fmt.Fprintf(w, "memory       vigil's VmRSS (/proc/<pid>/status), and its Go heap, stacks and goroutines (/metrics),\n             before and 1s after\n")
	_, _ = fmt.Fprintf(w, "sample       then tools/call echo in %s of the sessions, spread evenly\n\n", benchservice.Thousands(int64(min(cfg.sample, cfg.idle))))

	// Warm up: one session, echo calls, so that the baseline is a server
	// that has served.
	sid, err := loadgen.OpenSession(client, cfg.vigilURL, version2025)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if _, err := loadgen.RunFor(client, cfg.clients, cfg.warmup, want, func(_ int, id int64) *http.Request {
		return loadgen.SessionPost(cfg.vigilURL, sid, version2025, echoBody(id, ""))
	}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}

	rss0, gauges0, err := memory(client, cfg.vigilPID, metricsURL)
	if err != nil {
		return err
	}
	start := time.Now()
	sids, err := openSessions(client, cfg.vigilURL, cfg.idle, cfg.clients)
	opening := time.Since(start)
	if err != nil {
		return fmt.Errorf("opened %d of %d sessions: %w", len(sids), cfg.idle, err)
	}
	time.Sleep(cfg.settle) // let the last responses' buffers go (and, -redis, the idle sessions' views)
	rss1, gauges1, err := memory(client, cfg.vigilPID, metricsURL)
	if err != nil {
		return err
	}
	n := int64(cfg.idle)
	tw := newTable(w)
	_, _ = fmt.Fprintf(tw, "\t\tbefore\tafter\tgrowth\tper session\t\n")
	_, _ = fmt.Fprintf(tw, "\tVmRSS\t%s\t%s\t%s\t%s\t\n", benchservice.MiB(rss0), benchservice.MiB(rss1), benchservice.MiB(rss1-rss0), kib((rss1-rss0)/n))
	for i, g := range memoryGauges {
		a, b := gauges0[i], gauges1[i]
		if g.name == "go_goroutines" {
			_, _ = fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%.2f\t\n", g.label, benchservice.Thousands(a), benchservice.Thousands(b), benchservice.Thousands(b-a), float64(b-a)/float64(n))
			continue
		}
		_, _ = fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%s\t\n", g.label, benchservice.MiB(a), benchservice.MiB(b), benchservice.MiB(b-a), kib((b-a)/n))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(w, "opened       %s sessions in %.1fs (%s/s)\n", benchservice.Thousands(n), opening.Seconds(), benchservice.Thousands(int64(float64(n)/opening.Seconds())))

	k := min(cfg.sample, len(sids))
	sample := make([]string, k)
	for i := range sample {
		sample[i] = sids[i*len(sids)/k]
	}
	ok, firstErr := callEach(client, cfg.vigilURL, sample, cfg.clients)
	_, _ = fmt.Fprintf(w, "echo         %s of %s calls in sampled idle sessions succeeded\n", benchservice.Thousands(int64(ok)), benchservice.Thousands(int64(k)))
	if firstErr != nil {
		_, _ = fmt.Fprintf(w, "             first failure: %v\n", firstErr)
	}
	if rss2, ok := benchservice.RSSOf(cfg.vigilPID); ok {
		_, _ = fmt.Fprintf(w, "VmRSS        %s after the sample\n", benchservice.MiB(rss2))
	}
	return nil
}

// newTable returns a right-aligned table writer on w.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// kib formats bytes in kibibytes with one decimal.
func kib(bytes int64) string { return fmt.Sprintf("%.1f KiB", float64(bytes)/1024) }

// memoryGauges are the Go runtime's gauges of vigil's /metrics that the
// idle mode reports, with their labels in the report.
var memoryGauges = []struct{ name, label string }{
	{"go_memstats_heap_inuse_bytes", "heap in use"},
	{"go_memstats_stack_inuse_bytes", "stacks"},
	{"go_goroutines", "goroutines"},
}

// memory returns vigil's VmRSS and the values of memoryGauges, in order.
func memory(client *http.Client, pid int, metricsURL string) (int64, []int64, error) {
	rss, ok := benchservice.RSSOf(pid)
	if !ok {
		return 0, nil, fmt.Errorf("cannot read /proc/%d/status", pid)
	}
	resp, err := client.Get(metricsURL)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	values := make([]int64, len(memoryGauges))
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		for i, g := range memoryGauges {
			if v, ok := strings.CutPrefix(sc.Text(), g.name+" "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return 0, nil, fmt.Errorf("%s: %w", g.name, err)
				}
				values[i] = int64(f)
				found++
			}
		}
	}
	if found != len(memoryGauges) {
		return 0, nil, fmt.Errorf("%s (%s): %d of the %d Go runtime gauges found", metricsURL, resp.Status, found, len(memoryGauges))
	}
	return rss, values, sc.Err()
}

// openSessions opens n 2025-06-18 sessions at url over workers goroutines
// and returns their ids; it stops at the first failure.
func openSessions(client *http.Client, url string, n, workers int) ([]string, error) {
	sids := make([]string, n)
	var next, opened atomic.Int64
	var failed atomic.Bool
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n) && !failed.Load(); i = next.Add(1) - 1 {
				sid, err := loadgen.OpenSession(client, url, version2025)
				if err != nil {
					errs[w] = fmt.Errorf("session %d: %w", i, err)
					failed.Store(true)
					return
				}
				sids[i] = sid
				opened.Add(1)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return sids[:opened.Load()], err
	}
	return sids, nil
}

// callEach calls echo once in each session of sids over workers
// goroutines and returns how many calls succeeded and the first failure.
func callEach(client *http.Client, url string, sids []string, workers int) (int, error) {
	var next, ok atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var buf bytes.Buffer
			for i := next.Add(1) - 1; i < int64(len(sids)); i = next.Add(1) - 1 {
				err := loadgen.Do(client, loadgen.SessionPost(url, sids[i], version2025, echoBody(i+1, "")), &buf, want)
				if err == nil {
					ok.Add(1)
					continue
				}
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return int(ok.Load()), first
}
