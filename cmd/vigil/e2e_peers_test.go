package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// The real peers of the end-to-end test: a Prometheus (the Debian package)
// and a Jaeger v2 (built from its Go module by
// testdata/e2e/install-jaeger.sh), each run as a plain process on loopback.
// They are external processes with no readiness signal a test can wait on,
// so the test polls their HTTP APIs, with a bound on every wait.

// jaegerVersion is the Jaeger Go module version install-jaeger.sh builds;
// the binary is $(go env GOPATH)/bin/jaeger-<jaegerVersion>.
const jaegerVersion = "v1.76.0"

// e2eTools are the binaries the end-to-end test needs.
type e2eTools struct {
	prometheus string
	jaeger     string
}

// requireE2ETools finds prometheus and the cached Jaeger binary. If one is
// missing it skips the test, or fails it in CI (CI=true), where `make test`
// is expected to have installed them.
func requireE2ETools(t *testing.T) e2eTools {
	t.Helper()
	testkit.External(t, "prometheus and Jaeger")
	missing := func(reason, hint string) {
		t.Helper()
		missingComponent(t, reason+"; "+hint)
	}
	var tools e2eTools
	p, err := exec.LookPath("prometheus")
	if err != nil {
		missing("prometheus is not on PATH", "run `bash cmd/vigil/testdata/e2e/install-prometheus.sh` (apt-get install prometheus)")
	}
	tools.prometheus = p
	out, err := exec.Command("go", "env", "GOPATH").Output()
	require.NoError(t, err)
	gopath := strings.TrimSpace(strings.Split(strings.TrimSpace(string(out)), string(os.PathListSeparator))[0])
	tools.jaeger = filepath.Join(gopath, "bin", "jaeger-"+jaegerVersion)
	if _, err := os.Stat(tools.jaeger); errors.Is(err, os.ErrNotExist) {
		missing(tools.jaeger+" is missing", "run `bash cmd/vigil/testdata/e2e/install-jaeger.sh` (builds Jaeger "+jaegerVersion+", ~10 min once)")
	}
	return tools
}

// freePort returns a loopback TCP port that was free a moment ago, for the
// peers that need their ports in a configuration file. Another process
// could take it in between; on loopback in a test run that is rare enough.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// lockedBuffer collects a process's output for the test log.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// peerOutput collects a process's output.
type peerOutput interface {
	io.Writer
	String() string
}

// peerProcess is a started process that the test ends.
type peerProcess struct {
	name   string
	cmd    *exec.Cmd
	exited chan error // receives Wait's result once; put back by whoever takes it
}

// startPeer starts a process whose output goes to out. At cleanup it is
// stopped (SIGTERM, then SIGKILL after 10 s) if still running, and when the
// test failed, its output is logged.
func startPeer(t *testing.T, name string, out peerOutput, env []string, bin string, args ...string) *peerProcess {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if env != nil {
		cmd.Env = env
	}
	require.NoError(t, cmd.Start(), "start %s", name)
	p := &peerProcess{name: name, cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		start := time.Now()
		err := p.stop(10 * time.Second)
		t.Logf("%s stopped in %v: %v", name, time.Since(start).Round(time.Millisecond), err)
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
	return p
}

// stop sends SIGTERM and waits up to grace for the process to exit, then
// kills it. It returns Wait's result: nil for exit status 0.
func (p *peerProcess) stop(grace time.Duration) error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
		return err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		err := <-p.exited
		p.exited <- err
		return fmt.Errorf("%s did not exit within %v of SIGTERM (killed: %w)", p.name, grace, err)
	}
}

// pollUntil calls f every interval until it returns nil, the process dies,
// or timeout passes (then it fails the test with f's last error). For
// external processes only: the test has no other way to learn they are
// ready.
func pollUntil(t *testing.T, what string, timeout time.Duration, p *peerProcess, f func() error) {
	t.Helper()
	if err := pollPeer(what, timeout, p, f); err != nil {
		t.Fatal(err)
	}
}

// errPeerExited is in pollPeer's error when the process exited.
var errPeerExited = errors.New("exited")

// pollPeer is pollUntil returning its failure: one wrapping errPeerExited
// when p exited first.
func pollPeer(what string, timeout time.Duration, p *peerProcess, f func() error) error {
	deadline := time.Now().Add(timeout)
	const interval = 100 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		if p != nil {
			select {
			case werr := <-p.exited:
				p.exited <- werr
				status := "exit status 0"
				if werr != nil {
					status = werr.Error()
				}
				return fmt.Errorf("%s: %s %w: %s (last error: %w)", what, p.name, errPeerExited, status, err)
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v: %w", what, timeout, err)
		}
		time.Sleep(interval)
	}
}

// portAttempts is how many times a peer whose ports (from freePort) were
// taken before it bound them is started again on others.
const portAttempts = 4

// startOnFreePorts calls start, which starts a peer on ports from freePort
// and waits for it (pollPeer), until it succeeds, or fails for another
// reason than a port another process took in between ("address already
// in use" in the peer's output), or portAttempts times.
func startOnFreePorts[P any](t *testing.T, start func() (P, *peerProcess, peerOutput, error)) P {
	t.Helper()
	for attempt := 1; ; attempt++ {
		peer, proc, out, err := start()
		if err == nil {
			return peer
		}
		if !errors.Is(err, errPeerExited) || !strings.Contains(out.String(), "address already in use") || attempt == portAttempts {
			t.Fatal(err)
		}
		t.Logf("%s: a port was taken before it bound it; again on other ports (%d/%d)", proc.name, attempt+1, portAttempts)
	}
}

// getJSON GETs u and decodes a 200 answer into out.
func getJSON(ctx context.Context, hc *http.Client, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %s: %.300s", u, resp.Status, body)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: %w: %.300s", u, err, body)
	}
	return nil
}

// jaegerPeer is a running Jaeger v2 with memory storage.
type jaegerPeer struct {
	proc     *peerProcess
	otlpHTTP string // OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT)
	query    string // query service base URL (/api/traces/...)
	// metrics is the host:port of the Prometheus exporter of the metrics
	// pipeline (see startJaegerWithMetrics); "" without one.
	metrics string
}

// jaegerConfig is a trimmed all-in-one configuration (see
// cmd/jaeger/internal/all-in-one.yaml in the Jaeger module): memory storage,
// the OTLP/HTTP receiver, the query service and the health check, all on
// ports chosen by the test, so that nothing clashes with a Jaeger that
// happens to run on its default ports, and no telemetry port is opened. The
// query service does not trace itself (its default): it would export to
// localhost:4317 and, with nothing there, hang at shutdown.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:%[1]d
    grpc:
      endpoint: 127.0.0.1:%[2]d
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%[3]d
    grpc:
      endpoint: 127.0.0.1:%[5]d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%[4]d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// jaegerMetricsPipeline is what startJaegerWithMetrics adds to
// jaegerConfig: Jaeger v2 is an OpenTelemetry Collector distribution, with
// the Collector's prometheus exporter (OpenMetrics on, for the exemplars),
// here behind the same OTLP receiver as the traces.
const (
	jaegerMetricsPipeline = `    metrics:
      receivers: [otlp]
      exporters: [prometheus, otlphttp/sink]
`
	jaegerMetricsExporters = `  prometheus:
    endpoint: 127.0.0.1:%d
    enable_open_metrics: true
  otlphttp/sink:
    endpoint: %s
    compression: none
    retry_on_failure:
      enabled: false
    sending_queue:
      enabled: false
`
)

// startJaeger runs Jaeger and waits until its health check reports it
// ready (200 on /status).
func startJaeger(t *testing.T, bin string, hc *http.Client) *jaegerPeer {
	t.Helper()
	return startJaegerConfig(t, bin, hc, "")
}

// startJaegerWithMetrics runs Jaeger with a metrics pipeline too: OTLP in,
// out through the Collector's Prometheus exporter, at jaegerPeer.metrics,
// and through its OTLP/HTTP exporter to sink (a base URL), so that a test
// sees the metrics as the Collector received them.
func startJaegerWithMetrics(t *testing.T, bin string, hc *http.Client, sink string) *jaegerPeer {
	t.Helper()
	return startJaegerConfig(t, bin, hc, sink)
}

func startJaegerConfig(t *testing.T, bin string, hc *http.Client, sink string) *jaegerPeer {
	t.Helper()
	return startOnFreePorts(t, func() (*jaegerPeer, *peerProcess, peerOutput, error) {
		return startJaegerOnce(t, bin, hc, sink)
	})
}

// startJaegerOnce starts Jaeger on ports from freePort and waits for it.
func startJaegerOnce(t *testing.T, bin string, hc *http.Client, sink string) (*jaegerPeer, *peerProcess, peerOutput, error) {
	t.Helper()
	queryPort, grpcPort, healthPort, otlpPort, healthGRPCPort := freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)
	text := fmt.Sprintf(jaegerConfig, queryPort, grpcPort, healthPort, otlpPort, healthGRPCPort)
	var metricsAddr string
	if sink != "" {
		port := freePort(t)
		metricsAddr = fmt.Sprintf("127.0.0.1:%d", port)
		text = strings.Replace(text, "  telemetry:\n", jaegerMetricsPipeline+"  telemetry:\n", 1)
		text += fmt.Sprintf(jaegerMetricsExporters, port, sink)
	}
	config := filepath.Join(t.TempDir(), "jaeger.yaml")
	require.NoError(t, os.WriteFile(config, []byte(text), 0o600))
	out := &lockedBuffer{}
	j := &jaegerPeer{
		proc:     startPeer(t, "jaeger", out, nil, bin, "--config", config),
		otlpHTTP: fmt.Sprintf("http://127.0.0.1:%d", otlpPort),
		query:    fmt.Sprintf("http://127.0.0.1:%d", queryPort),
		metrics:  metricsAddr,
	}
	health := fmt.Sprintf("http://127.0.0.1:%d/status", healthPort)
	err := pollPeer("jaeger health "+health, 60*time.Second, j.proc, func() error {
		return getJSON(t.Context(), hc, health, nil)
	})
	return j, j.proc, out, err
}

// jaegerTrace is a trace as GET /api/traces/{id} returns it.
type jaegerTrace struct {
	TraceID   string       `json:"traceID"`
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags      []jaegerKV                    `json:"tags"`
	Logs      []struct{ Fields []jaegerKV } `json:"logs"`
	ProcessID string                        `json:"processID"`
}

type jaegerKV struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// tags returns a span's tags as strings.
func (s jaegerSpan) tags() map[string]string { return kvMap(s.Tags) }

func kvMap(kvs []jaegerKV) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = fmt.Sprint(kv.Value)
	}
	return m
}

// trace polls until the trace with id holds a span named spanName, or fails
// the test after timeout. Spans reach Jaeger through vigil's batch exporter
// and Jaeger's batch processor, so a trace appears some time after the call.
func (j *jaegerPeer) trace(t *testing.T, hc *http.Client, traceID, spanName string, timeout time.Duration) jaegerTrace {
	t.Helper()
	var found jaegerTrace
	pollUntil(t, "jaeger trace "+traceID, timeout, j.proc, func() error {
		var out struct {
			Data []jaegerTrace `json:"data"`
		}
		if err := getJSON(t.Context(), hc, j.query+"/api/traces/"+traceID, &out); err != nil {
			return err
		}
		for _, tr := range out.Data {
			for _, s := range tr.Spans {
				if s.OperationName == spanName {
					found = tr
					return nil
				}
			}
		}
		return fmt.Errorf("no span %q in %+v", spanName, out.Data)
	})
	return found
}

// prometheusPeer is a running Prometheus scraping one target.
type prometheusPeer struct {
	proc *peerProcess
	api  string // base URL, http://127.0.0.1:PORT
	hc   *http.Client
}

// prometheusConfig scrapes one target every second, and evaluates the rule
// files (if any) every second.
const prometheusConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: vigil
    static_configs:
      - targets: ['%s']
`

// startPrometheus runs Prometheus (exemplar storage on) scraping target's
// /metrics, with the rule files (absolute paths), and waits until the
// target's health is "up": the first scrape comes ~5-6 s after start.
func startPrometheus(t *testing.T, bin, target string, hc *http.Client, ruleFiles ...string) *prometheusPeer {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	text := fmt.Appendf(nil, prometheusConfig, target)
	if len(ruleFiles) > 0 {
		text = append(text, "rule_files:\n"...)
		for _, f := range ruleFiles {
			text = fmt.Appendf(text, "  - %q\n", f)
		}
	}
	require.NoError(t, os.WriteFile(config, text, 0o600))
	return startOnFreePorts(t, func() (*prometheusPeer, *peerProcess, peerOutput, error) {
		return startPrometheusOnce(t, bin, config, filepath.Join(dir, "data"), target, hc)
	})
}

// startPrometheusOnce starts Prometheus with config on a port from
// freePort and waits until it scrapes target.
func startPrometheusOnce(t *testing.T, bin, config, data, target string, hc *http.Client) (*prometheusPeer, *peerProcess, peerOutput, error) {
	t.Helper()
	port := freePort(t)
	output := &lockedBuffer{}
	p := &prometheusPeer{
		proc: startPeer(t, "prometheus", output, nil, bin,
			"--config.file="+config,
			"--storage.tsdb.path="+data,
			"--web.listen-address=127.0.0.1:"+strconv.Itoa(port),
			"--enable-feature=exemplar-storage",
		),
		api: fmt.Sprintf("http://127.0.0.1:%d", port),
		hc:  hc,
	}
	err := pollPeer("prometheus scrapes "+target, 60*time.Second, p.proc, func() error {
		var out struct {
			Data struct {
				ActiveTargets []struct {
					ScrapeURL string `json:"scrapeUrl"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if err := getJSON(t.Context(), hc, p.api+"/api/v1/targets", &out); err != nil {
			return err
		}
		for _, tg := range out.Data.ActiveTargets {
			if tg.Health == "up" {
				return nil
			}
		}
		return fmt.Errorf("targets: %+v", out.Data.ActiveTargets)
	})
	return p, p.proc, output, err
}

// apiGet calls a Prometheus HTTP API endpoint and decodes its data.
func (p *prometheusPeer) apiGet(ctx context.Context, path string, params url.Values, data any) error {
	var out struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := getJSON(ctx, p.hc, p.api+path+"?"+params.Encode(), &out); err != nil {
		return err
	}
	if out.Status != "success" {
		return fmt.Errorf("%s %v: %s", path, params, out.Error)
	}
	return json.Unmarshal(out.Data, data)
}

// promSample is one element of an instant vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query evaluates an instant query and returns its vector.
func (p *prometheusPeer) query(ctx context.Context, q string) ([]promSample, error) {
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}
	if err := p.apiGet(ctx, "/api/v1/query", url.Values{"query": {q}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s", q, data.ResultType)
	}
	return data.Result, nil
}

// sumBy evaluates sum by (label) (expr) and returns the sums by label value.
func (p *prometheusPeer) sumBy(ctx context.Context, label, expr string) (map[string]float64, error) {
	res, err := p.query(ctx, fmt.Sprintf("sum by (%s) (%s)", label, expr))
	if err != nil {
		return nil, err
	}
	sums := make(map[string]float64, len(res))
	for _, s := range res {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		if err != nil {
			return nil, err
		}
		sums[s.Metric[label]] = v
	}
	return sums, nil
}

// scalar evaluates a query that yields one sample (or none, reported as an
// error) and returns its value.
func (p *prometheusPeer) scalar(ctx context.Context, q string) (float64, error) {
	res, err := p.query(ctx, q)
	if err != nil {
		return 0, err
	}
	if len(res) != 1 {
		return 0, fmt.Errorf("query %s: %d samples, want 1", q, len(res))
	}
	return strconv.ParseFloat(fmt.Sprint(res[0].Value[1]), 64)
}

// TestStartOnFreePortsRetries: a peer that exits because a port was
// taken is started again; one that fails otherwise is not.
func TestStartOnFreePortsRetries(t *testing.T) {
	proc := &peerProcess{name: "peer"}
	taken := &lockedBuffer{}
	_, _ = taken.Write([]byte("listen tcp 127.0.0.1:1: bind: address already in use"))
	calls := 0
	got := startOnFreePorts(t, func() (int, *peerProcess, peerOutput, error) {
		calls++
		if calls < 3 {
			return 0, proc, taken, fmt.Errorf("health: peer %w: exit status 1", errPeerExited)
		}
		return calls, proc, &lockedBuffer{}, nil
	})
	assert.Equal(t, 3, got, "started again until it bound its ports")
}
