package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
)

// config is what the flags select.
type config struct {
	goCmd     string
	keep      bool
	vigilLog  string
	vigilSrc  string   // a checkout to build cmd/vigil from; "" for this one
	against   string   // a checkout whose cmd/vigil is the baseline instead of the floor; "" for the floor
	vigilArgs []string // -vigil-arg: more arguments for vigil (and the -against vigil)
	idle      int
	auth      bool // vigil with JWT auth against vigil without, instead of vigil against the floor
	redis     bool // vigil -redis against vigil in memory, instead of vigil against the floor
	hop       bool // the latency of a hop between two vigil -redis replicas
	gateway   bool // vigil through a vigil -upstream gateway against vigil directly
	hopTries  int  // samples of each -hop measurement
	footprint bool // the handlers' instructions and cache misses under cachegrind
	weight    bool // what the one-tool servers link, weigh and take to build
	scaleRun  bool // the scale benchmark: streams and fan-out, overload, large payloads
	scale     scaleConfig
	rates     bool          // gateways at fixed rates against TBXark/mcp-proxy (rates.go)
	tbxark    string        // a git checkout of TBXark/mcp-proxy for -rates; "": not measured
	rateRest  time.Duration // -rates: quiet before resident memory is read
	rateRound time.Duration // -rates: length of a round
	// -rates: rounds per gateway, clients and sessions of the load
	rateRounds, rateClients, rateSessions int
	clients                               int      // concurrent clients (and tokens, with auth)
	loadFlags                             []string // passed on to the load generator
}

func main() {
	var cfg config
	flag.StringVar(&cfg.goCmd, "go", "go", "the go `command` that builds the binaries")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (binaries, vigil.log)")
	flag.StringVar(&cfg.vigilLog, "vigil-log", "", "`file` for vigil's standard error (default: vigil.log in the temporary directory; /dev/null to discard)")
	flag.StringVar(&cfg.vigilSrc, "vigil-src", "", "build cmd/vigil from the checkout in `dir` (another commit, to compare with) instead of this one")
	flag.StringVar(&cfg.against, "against", "", "measure vigil against cmd/vigil built from the checkout in `dir` (the parent commit), both with the same flags under the same load, instead of against the floor")
	flag.Func("vigil-arg", "one more `argument` for cmd/vigil in bench-service (and the -against vigil), in -scale's overload, payload and callers phases and for the gateways of -rates, such as -vigil-arg=-overload-target=0; repeatable", func(v string) error {
		cfg.vigilArgs = append(cfg.vigilArgs, v)
		return nil
	})
	flag.IntVar(&cfg.idle, "idle", 0, "open this many idle sessions instead of measuring throughput (0: throughput)")
	flag.BoolVar(&cfg.auth, "auth", false, "measure authorization: vigil with -auth-issuer (a cached valid JWT per client) against the same vigil without auth, instead of vigil against the floor")
	flag.BoolVar(&cfg.redis, "redis", false, "measure the shared mode: vigil -redis (one replica, on a redis-server it starts) against vigil in memory, instead of vigil against the floor")
	flag.BoolVar(&cfg.hop, "hop", false, "measure a hop between two vigil -redis replicas: an elicitation answer and a cancel or DELETE posted to the replica that does not run the request")
	flag.BoolVar(&cfg.gateway, "gateway", false, "measure a gateway hop: vigil called through a vigil -upstream in front of it (over HTTP, then over stdio) against vigil called directly")
	flag.BoolVar(&cfg.rates, "rates", false, "measure gateways at fixed rates (server-everything over stdio at 50 calls/s, HTTP at 200 and 1,000): vigil, vigil -upstream-shared and TBXark/mcp-proxy (-tbxark), CPU per call, latency, context switches and system calls per call, resident memory at rest")
	flag.StringVar(&cfg.tbxark, "tbxark", "", "with -rates: a git checkout `dir` of TBXark/mcp-proxy to build and measure beside vigil")
	flag.DurationVar(&cfg.rateRest, "rest", time.Minute, "with -rates: quiet after the load before resident memory is read")
	flag.DurationVar(&cfg.rateRound, "rate-round", 5*time.Second, "with -rates: length of a round")
	flag.IntVar(&cfg.rateRounds, "rate-rounds", 6, "with -rates: rounds per gateway")
	flag.IntVar(&cfg.rateClients, "rate-clients", 64, "with -rates: concurrent clients")
	flag.IntVar(&cfg.rateSessions, "rate-sessions", 4, "with -rates: 2025-06-18 sessions the clients share")
	flag.IntVar(&cfg.hopTries, "hop-tries", 200, "with -hop: samples of each measurement")
	flag.BoolVar(&cfg.footprint, "footprint", false, "measure what one request costs vigil's handler and the floor's in process, under cachegrind: instructions, L1 instruction- and data-cache misses, mispredicted branches (needs valgrind)")
	flag.BoolVar(&cfg.weight, "weight", false, "measure the README's first program against the same one-tool server in go-sdk and mcp-go: packages linked outside the standard library, binary size and build time from an empty build cache")
	flag.IntVar(&cfg.clients, "clients", 32, "concurrent clients")
	flag.BoolVar(&cfg.scaleRun, "scale", false, "run the scale benchmark (make bench-scale): sessions with open GET streams and list_changed fan-outs on cmd/vigil-everything, overload and a large echo on cmd/vigil, each against the floor")
	flag.IntVar(&cfg.scale.sessions, "scale-sessions", 10000, "with -scale: sessions, each with its standalone GET stream (lowered if the file-descriptor limit cannot hold them)")
	flag.IntVar(&cfg.scale.fanouts, "fanouts", 20, "with -scale: list_changed fan-outs to every stream")
	flag.StringVar(&cfg.scale.phases, "scale-phases", "streams,overload,payload,callers", "with -scale: comma-separated phases to run: streams, overload, payload, callers")
	flag.StringVar(&cfg.scale.clients, "overload-clients", "32,512,2048", "with -scale: comma-separated concurrency levels of the overload phase, the first the peak the others are compared with")
	flag.IntVar(&cfg.scale.reps, "overload-reps", 3, "with -scale: reps of the overload phase honoring Retry-After, in each of which a server runs its rounds at every level back to back, the peak's included; each level is compared with the same rep's peak (positive)")
	flag.DurationVar(&cfg.scale.round, "scale-round", 10*time.Second, "with -scale: length of each overload round and of each server's payload round")
	flag.DurationVar(&cfg.scale.settle, "scale-settle", 2*time.Second, "with -scale: wait before each RSS reading of the streams phase")
	flag.StringVar(&cfg.scale.callers, "callers-clients", "400,32", "with -scale: the callers phase's clients, `heavy,light`: each of its four heavy callers' (within vigil's default in-flight quota of 512) and the light one's")
	flag.IntVar(&cfg.scale.payloadBytes, "payload-bytes", 1<<20, "with -scale: `bytes` of the payload phase's echo text")
	sessions := flag.Int("sessions", 8, "2025-06-18 sessions the clients share")
	rounds := flag.Int("rounds", 15, "timed rounds per server and workload")
	round := flag.Duration("round", time.Second, "length of a round")
	warmup := flag.Duration("warmup", time.Second, "untimed warm-up per server and workload")
	workloads := flag.String("workloads", "2025,2026", "comma-separated workloads: 2025 (sessions), 2026 (stateless)")
	sample := flag.Int("sample", 1000, "with -idle: sessions in which to call echo afterwards")
	fixedRate := flag.Float64("rate", 0, "bench-service: hold the floor and vigil to this many `requests a second`, spaced evenly, instead of the most each can take (0: full load)")
	debugRefresh := flag.Duration("debug-refresh", 0, "during vigil's rounds, GET its /debug/vigil this often, as a browser with the page open does (0: never)")
	flag.Parse()
	cfg.loadFlags = []string{
		"-clients", strconv.Itoa(cfg.clients), "-sessions", strconv.Itoa(*sessions),
		"-rounds", strconv.Itoa(*rounds), "-round", round.String(), "-warmup", warmup.String(),
		"-workloads", *workloads, "-sample", strconv.Itoa(*sample), "-idle", strconv.Itoa(cfg.idle),
		"-debug-refresh", debugRefresh.String(), "-rate", strconv.FormatFloat(*fixedRate, 'f', -1, 64),
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	run := run
	switch {
	case cfg.auth:
		run = runAuth
	case cfg.redis && cfg.idle == 0:
		run = runRedis
	case cfg.hop:
		run = runHop
	case cfg.rates:
		run = runRates
	case cfg.gateway:
		run = runGateway
	case cfg.footprint:
		run = runFootprint
	case cfg.weight:
		run = runWeight
	case cfg.scaleRun:
		run = runScale
	}
	err := inTempDir(cfg, func(dir string) error { return run(ctx, cfg, dir) })
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vigil-bench:", err)
		os.Exit(1)
	}
}

// inTempDir runs f with a new temporary directory for the binaries and
// logs, removed afterwards unless cfg.keep.
func inTempDir(cfg config, f func(dir string) error) (err error) {
	dir, err := os.MkdirTemp("", "vigil-bench-")
	if err != nil {
		return err
	}
	defer func() {
		if cfg.keep {
			fmt.Printf("\nkept %s\n", dir)
			return
		}
		err = errors.Join(err, os.RemoveAll(dir))
	}()
	return f(dir)
}

// run builds the binaries into dir, starts the servers, runs the load
// generator and stops the servers.
func run(ctx context.Context, cfg config, dir string) (err error) {
	fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil, the floor and the load generator into %s\n", dir)
	pkgs := []string{
		"github.com/vigil-mcp/vigil/cmd/vigil-bench/floor",
		"github.com/vigil-mcp/vigil/cmd/vigil-bench/load",
	}
	if cfg.vigilSrc == "" {
		pkgs = append(pkgs, "github.com/vigil-mcp/vigil/cmd/vigil")
	}
	if err := goBuild(ctx, cfg.goCmd, "", dir, pkgs...); err != nil {
		return err
	}
	if cfg.vigilSrc != "" {
		fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil from %s\n", cfg.vigilSrc)
		if err := goBuild(ctx, cfg.goCmd, cfg.vigilSrc, dir, "./cmd/vigil"); err != nil {
			return err
		}
	}

	logPath := cfg.vigilLog
	if logPath == "" {
		logPath = filepath.Join(dir, "vigil.log")
	}
	vigilArgs := append([]string{"-http", "127.0.0.1:0"}, cfg.vigilArgs...)
	if cfg.idle > 0 {
		// One load generator is one caller: no per-caller session quota.
		vigilArgs = append(vigilArgs, "-max-sessions", strconv.Itoa(cfg.idle+64), "-quota-sessions", "0")
	}
	var redisMemory func() (int64, error)
	if cfg.redis { // -idle -redis: the sessions live in Redis
		redis, redisURL, err := startRedis(ctx, dir)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stopProcess(redis, "redis-server")) }()
		vigilArgs = append(vigilArgs, "-redis", redisURL)
		redisMemory = func() (int64, error) { return usedMemory(ctx, redisURL) }
		// Views of idle sessions are let go after 30 s: measure after that.
		cfg.loadFlags = append(cfg.loadFlags, "-settle", "35s")
	}
	vigil, vigilURL, err := startVigil(ctx, filepath.Join(dir, "vigil"), vigilArgs, logPath)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProcess(vigil, "vigil")) }()
	loadArgs := append([]string{"-vigil", vigilURL, "-vigil-pid", strconv.Itoa(vigil.Process.Pid)}, cfg.loadFlags...)

	var floorDesc string
	switch {
	case cfg.idle == 0 && cfg.against != "":
		base, err := startAgainst(ctx, cfg, dir, vigilArgs)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stopProcess(base.cmd, "vigil from "+cfg.against)) }()
		loadArgs = append(loadArgs, "-floor", base.url, "-floor-pid", strconv.Itoa(base.cmd.Process.Pid), "-floor-name", "against")
		floorDesc = fmt.Sprintf("%s (pid %d): cmd/vigil built from %s, the same flags (the \"against\" rows)", base.url, base.cmd.Process.Pid, cfg.against)
	case cfg.idle == 0:
		floor, floorURL, err := startFloor(ctx, filepath.Join(dir, "floor"))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stopProcess(floor, "floor")) }()
		loadArgs = append(loadArgs, "-floor", floorURL, "-floor-pid", strconv.Itoa(floor.Process.Pid))
		floorDesc = fmt.Sprintf("%s (pid %d): plain net/http, decodes the JSON-RPC request, answers vigil's result", floorURL, floor.Process.Pid)
	}

	fmt.Printf("vigil-bench  %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("machine      %s/%s, %d CPUs%s, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version())
	fmt.Printf("vigil        %s (pid %d): vigil %s, defaults otherwise: tracing (in-memory ring),\n", vigilURL, vigil.Process.Pid, strings.Join(vigilArgs, " "))
	fmt.Printf("             metrics, a log line per request to %s, limits, -request-timeout 1m, -idle-timeout 30m\n", logPath)
	if floorDesc != "" {
		fmt.Printf("floor        %s\n", floorDesc)
	}
	var redis0 int64
	if redisMemory != nil {
		if redis0, err = redisMemory(); err != nil {
			return err
		}
	}
	load := exec.CommandContext(ctx, filepath.Join(dir, "load"), loadArgs...)
	load.Stdout, load.Stderr = os.Stdout, os.Stderr
	if err := load.Run(); err != nil {
		return fmt.Errorf("load generator: %w", err)
	}
	if redisMemory != nil {
		redis1, err := redisMemory()
		if err != nil {
			return err
		}
		fmt.Printf("redis        used_memory %s before, %s after: %.2f KiB per session\n",
			benchservice.MiB(redis0), benchservice.MiB(redis1), float64(redis1-redis0)/1024/float64(cfg.idle))
	}
	if cfg.idle == 0 && logPath != os.DevNull {
		if err := checkRecorded(ctx, strings.TrimSuffix(vigilURL, "/mcp"), vigil, logPath); err != nil {
			return err
		}
	}
	if lines, size, ok := countLines(logPath); ok {
		fmt.Printf("vigil log    %d lines, %.1f MiB\n", lines, float64(size)/(1<<20))
	}
	return nil
}

// checkRecorded reads what vigil recorded of the load (its metrics and trace
// ring), stops it so that its log is flushed, counts the log's request
// records, and prints whether every finished request is in the log (or
// counted as a dropped line) and the ring holds traces.
func checkRecorded(ctx context.Context, base string, vigil *exec.Cmd, logPath string) error {
	var rec benchservice.Recorded
	metrics, err := httpGet(ctx, base+"/metrics")
	if err != nil {
		return err
	}
	if rec.Finished, _, err = benchkit.SumCounter(bytes.NewReader(metrics), "mcp_server_requests_finished_total"); err != nil {
		return fmt.Errorf("vigil /metrics: %w", err)
	}
	if rec.LinesDropped, _, err = benchkit.SumCounter(bytes.NewReader(metrics), "mcp_server_log_lines_dropped_total"); err != nil {
		return fmt.Errorf("vigil /metrics: %w", err)
	}
	page, err := httpGet(ctx, base+"/debug/vigil?format=json")
	if err != nil {
		return err
	}
	var debug struct {
		Traces []json.RawMessage `json:"traces"`
	}
	if err := json.Unmarshal(page, &debug); err != nil {
		return fmt.Errorf("vigil /debug/vigil: %w", err)
	}
	rec.Traces = len(debug.Traces)
	if err := stopProcess(vigil, "vigil"); err != nil { // flushes the log
		return err
	}
	f, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if rec.LogLines, err = benchservice.CountRecords(f, "request"); err != nil {
		return err
	}
	fmt.Printf("recorded     %s\n", rec)
	if !rec.Complete() {
		return errors.New("vigil did not record every request")
	}
	return nil
}

// httpGet returns the body of a 200 answer to a GET of url.
func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}

// serving is vigil's log line that gives its MCP URL.
var serving = regexp.MustCompile(`msg="serving MCP" url=(http://127\.0\.0\.1:[0-9]+/mcp)`)

// startVigil starts vigil with args, its standard error appended to
// logPath, and waits until its log gives its URL and /readyz answers 200.
func startVigil(ctx context.Context, bin string, args []string, logPath string) (*exec.Cmd, string, error) {
	cmd, url, err := startLogged(ctx, bin, args, logPath)
	if err != nil {
		return nil, "", err
	}
	if err := waitReady(ctx, strings.TrimSuffix(url, "/mcp")+"/readyz"); err != nil {
		_ = stopProcess(cmd, "vigil")
		return nil, "", err
	}
	return cmd, url, nil
}

// startLogged starts bin (vigil or vigil-everything) with args, its
// standard error appended to logPath, and waits until its log gives the
// URL it serves MCP at.
func startLogged(ctx context.Context, bin string, args []string, logPath string) (*exec.Cmd, string, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = logFile.Close() }() // the child has its own descriptor
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = defaultEnv()
	cmd.Stderr = logFile
	if logPath == os.DevNull {
		cmd.Stderr = nil // nothing to read the URL from: vigil gets a pipe
	}
	var pipe io.ReadCloser
	if cmd.Stderr == nil {
		if pipe, err = cmd.StderrPipe(); err != nil {
			return nil, "", err
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	var url string
	if pipe != nil {
		// Read the start-up lines, then discard the rest as /dev/null would.
		sc := bufio.NewScanner(pipe)
		for url == "" && sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				url = m[1]
			}
		}
		go func() { _, _ = io.Copy(io.Discard, pipe) }()
	} else {
		for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			raw, _ := os.ReadFile(logPath)
			if m := serving.FindSubmatch(raw); m != nil {
				url = string(m[1])
			}
		}
	}
	if url == "" {
		_ = stopProcess(cmd, filepath.Base(bin))
		return nil, "", fmt.Errorf("%s did not log its URL (see %s)", filepath.Base(bin), logPath)
	}
	return cmd, url, nil
}

// defaultEnv is this process's environment without VIGIL_* and OTEL_*
// variables, which would change vigil's defaults, and with the cluster key
// vigil -redis needs (a vigil that predates it ignores it).
func defaultEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VIGIL_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return append(env, "VIGIL_CLUSTER_KEY="+clusterKey())
}

// clusterKey is the cluster key of every vigil this run starts: random,
// and the same for all, as the replicas of one service share theirs.
var clusterKey = sync.OnceValue(func() string {
	var key [48]byte
	_, _ = rand.Read(key[:]) // crypto/rand.Read never fails
	return base64.StdEncoding.EncodeToString(key[:])
})

// waitReady polls url until it answers 200, for up to 10 seconds.
func waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready: %w", url, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startFloor starts the floor, with args after its -addr, and returns it
// with the URL it prints.
func startFloor(ctx context.Context, bin string, args ...string) (*exec.Cmd, string, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		_ = stopProcess(cmd, "floor")
		return nil, "", fmt.Errorf("floor: unexpected first line %q: %w", line, err)
	}
	return cmd, url, nil
}

// stopProcess sends SIGTERM to cmd's process and waits for it to exit,
// killing it after 15 seconds. An exit caused by the signal is no error.
func stopProcess(cmd *exec.Cmd, name string) error {
	if cmd.ProcessState != nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) && !exit.Exited() {
			return nil // ended by the signal
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("%s: killed after 15s: %w", name, <-done)
	}
}

// cpuModel returns ", " and the first model name of /proc/cpuinfo, or "".
func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range bytes.Lines(raw) {
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && string(bytes.TrimSpace(k)) == "model name" {
			return ", " + string(bytes.TrimSpace(v))
		}
	}
	return ""
}

// countLines returns the number of lines and the size of the file at
// path; false if it cannot be read or is not a regular file.
func countLines(path string) (int, int64, bool) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return 0, 0, false
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	return bytes.Count(raw, []byte("\n")), st.Size(), true
}

// goBuild builds pkgs, in the module at src ("" for this one), into dir,
// as deploy/Dockerfile builds the vigil it ships (shippedBuild), so that
// what is measured is the binary operators run. Each command's version is
// "dev", as the floor's serverInfo says: the answers of vigil, of the
// floor and of the parent (-against) then have the same bytes, whatever
// version the go command would stamp.
func goBuild(ctx context.Context, goCmd, src, dir string, pkgs ...string) error {
	args := append([]string{"build"}, shippedBuild.args("-X main.version=dev")...)
	build := exec.CommandContext(ctx, goCmd, append(append(args, "-o", dir+string(filepath.Separator)), pkgs...)...)
	build.Dir, build.Env = src, shippedBuild.env()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build in %q: %w", src, err)
	}
	return nil
}

// buildFlags are the flags of a go build.
type buildFlags struct {
	cgo     bool
	tags    string
	ldflags string
}

// shippedBuild is deploy/Dockerfile's go build of cmd/vigil
// (TestBenchBuildsAsTheDockerfile): static (no cgo, no libc mapped), paths
// trimmed, no symbol table or DWARF, and gRPC without its x/net/trace
// event log, which Vigil never enables, and whose html/template would keep
// every exported method of every linked type in the binary.
var shippedBuild = buildFlags{tags: "grpcnotrace", ldflags: "-s -w"}

// args returns the build's flags, with more linker flags appended.
func (b buildFlags) args(ldflags ...string) []string {
	args := []string{"-trimpath", "-ldflags", strings.Join(append([]string{b.ldflags}, ldflags...), " ")}
	if b.tags != "" {
		args = append(args, "-tags", b.tags)
	}
	return args
}

// env returns the build's environment.
func (b buildFlags) env() []string {
	if b.cgo {
		return append(os.Environ(), "CGO_ENABLED=1")
	}
	return append(os.Environ(), "CGO_ENABLED=0")
}
