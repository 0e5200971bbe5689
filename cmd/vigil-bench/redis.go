package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
	"github.com/vigil-mcp/vigil/internal/loadgen"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// runRedis measures the shared mode: the same vigil binary in memory and
// with -redis (one replica, sessions and their events on a redis-server this
// program starts), under the same load, and reports redis-server's own CPU
// per request of vigil+redis, which competes for the same cores.
func runRedis(ctx context.Context, cfg config, dir string) (err error) {
	fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil and the load generator into %s\n", dir)
	if err := goBuild(ctx, cfg.goCmd, cfg.vigilSrc, dir, "github.com/vigil-mcp/vigil/cmd/vigil"); err != nil {
		return err
	}
	if err := goBuild(ctx, cfg.goCmd, "", dir, "github.com/vigil-mcp/vigil/cmd/vigil-bench/load"); err != nil {
		return err
	}
	redis, redisURL, err := startRedis(ctx, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProcess(redis, "redis-server")) }()

	memArgs := []string{"-http", "127.0.0.1:0"}
	redisArgs := []string{"-http", "127.0.0.1:0", "-redis", redisURL}
	mem, memURL, err := startVigil(ctx, filepath.Join(dir, "vigil"), memArgs, filepath.Join(dir, "vigil.log"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProcess(mem, "vigil")) }()
	shared, sharedURL, err := startVigil(ctx, filepath.Join(dir, "vigil"), redisArgs, filepath.Join(dir, "vigil-redis.log"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProcess(shared, "vigil with -redis")) }()

	fmt.Printf("vigil-bench  %s, shared sessions on Redis\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("vigil        %s (pid %d): vigil %s (sessions in memory)\n", memURL, mem.Process.Pid, strings.Join(memArgs, " "))
	fmt.Printf("vigil+redis  %s (pid %d): vigil %s (one replica)\n", sharedURL, shared.Process.Pid, strings.Join(redisArgs, " "))
	fmt.Printf("redis        %s (pid %d): Debian's redis-server, no persistence\n", redisURL, redis.Process.Pid)
	redisCPU0, _ := loadgen.CPUOf(redis.Process.Pid)
	loadArgs := append([]string{
		"-floor", memURL, "-floor-pid", strconv.Itoa(mem.Process.Pid), "-floor-name", "vigil",
		"-vigil", sharedURL, "-vigil-pid", strconv.Itoa(shared.Process.Pid), "-vigil-name", "vigil+redis",
	}, cfg.loadFlags...)
	load := exec.CommandContext(ctx, filepath.Join(dir, "load"), loadArgs...)
	load.Stdout, load.Stderr = os.Stdout, os.Stderr
	if err := load.Run(); err != nil {
		return fmt.Errorf("load generator: %w", err)
	}
	redisCPU1, _ := loadgen.CPUOf(redis.Process.Pid)
	metrics, err := httpGet(ctx, strings.TrimSuffix(sharedURL, "/mcp")+"/metrics")
	if err != nil {
		return err
	}
	finished, _, err := benchkit.SumCounter(bytes.NewReader(metrics), "mcp_server_requests_finished_total")
	if err != nil {
		return err
	}
	if finished > 0 {
		fmt.Printf("redis CPU    %v over vigil+redis's %d requests (warm-ups included): %.1f µs/request\n",
			(redisCPU1 - redisCPU0).Round(time.Millisecond), finished, float64((redisCPU1-redisCPU0).Microseconds())/float64(finished))
	}
	return nil
}

// startRedis starts redis-server on a free loopback port with its data in
// dir and no persistence, and returns it with its URL.
func startRedis(ctx context.Context, dir string) (*exec.Cmd, string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", errors.New("redis-server is not installed (apt-get install redis-server; make test installs it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	cmd := exec.CommandContext(ctx, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			_ = stopProcess(cmd, "redis-server")
			return nil, "", errors.New("redis-server did not listen within 10s")
		}
		time.Sleep(10 * time.Millisecond) // waiting for a process to listen: no event to wait on
	}
	return cmd, "redis://" + addr + "/0", nil
}

// hopClient talks MCP to two replicas of one shared session.
type hopClient struct {
	http *http.Client
}

// post sends body on session sid to url and returns the response.
func (c *hopClient) post(ctx context.Context, url, sid, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", protocol.Version20251125)
	}
	return c.http.Do(req)
}

// do posts and reads the whole answer.
func (c *hopClient) do(ctx context.Context, url, sid, body string) (*http.Response, []byte, error) {
	resp, err := c.post(ctx, url, sid, body)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// session opens a session with elicitation on url.
func (c *hopClient) session(ctx context.Context, url string) (string, error) {
	resp, _, err := c.do(ctx, url, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+protocol.Version20251125+`","capabilities":{"elicitation":{}},"clientInfo":{"name":"hop","version":"1"}}}`)
	if err != nil {
		return "", err
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		return "", fmt.Errorf("initialize: status %d", resp.StatusCode)
	}
	if _, _, err := c.do(ctx, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return "", err
	}
	return sid, nil
}

// runHop measures what a hop between two replicas adds: with two vigil
// -redis replicas A and B, the time from posting the answer to an
// elicitation that a handler on A waits for until A's stream delivers the
// tool's result, with the answer posted to B (relayed through Redis to A)
// against posted to A; and the time from posting notifications/cancelled
// (then DELETE) to B until the POST of the request that A runs ends.
func runHop(ctx context.Context, cfg config, dir string) (err error) {
	fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil into %s\n", dir)
	if err := goBuild(ctx, cfg.goCmd, cfg.vigilSrc, dir, "github.com/vigil-mcp/vigil/cmd/vigil"); err != nil {
		return err
	}
	redis, redisURL, err := startRedis(ctx, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProcess(redis, "redis-server")) }()
	var urls [2]string
	for i := range urls {
		p, u, err := startVigil(ctx, filepath.Join(dir, "vigil"), []string{"-http", "127.0.0.1:0", "-redis", redisURL}, filepath.Join(dir, fmt.Sprintf("vigil-%d.log", i)))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stopProcess(p, "vigil")) }()
		urls[i] = u
	}
	a, b := urls[0], urls[1]
	c := &hopClient{http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	fmt.Printf("vigil-bench  %s, a hop between replicas\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("replicas     A %s, B %s: vigil -redis %s\n", a, b, redisURL)
	tries := cfg.hopTries

	answer := func(to string) ([]time.Duration, error) {
		var out []time.Duration
		for range tries {
			sid, err := c.session(ctx, a)
			if err != nil {
				return nil, err
			}
			resp, err := c.post(ctx, a, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm_action","arguments":{"action":"hop"}}}`)
			if err != nil {
				return nil, err
			}
			events := newEventReader(resp.Body)
			ask, err := events.next()
			if err != nil {
				_ = resp.Body.Close()
				return nil, fmt.Errorf("the elicitation: %w", err)
			}
			id := jsonMember(ask, "id")
			// B learns of the session first, so that the timed answer is
			// the hop, not B's first load of the session.
			if _, _, err := c.do(ctx, to, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); err != nil {
				return nil, err
			}
			start := time.Now()
			if _, _, err := c.do(ctx, to, sid, `{"jsonrpc":"2.0","id":`+id+`,"result":{"action":"accept","content":{"confirm":true}}}`); err != nil {
				return nil, err
			}
			if _, err := events.next(); err != nil {
				_ = resp.Body.Close()
				return nil, fmt.Errorf("the result: %w", err)
			}
			out = append(out, time.Since(start))
			_ = resp.Body.Close()
		}
		return out, nil
	}
	local, err := answer(a)
	if err != nil {
		return err
	}
	hop, err := answer(b)
	if err != nil {
		return err
	}
	lp50, lp99 := quantile(local, 0.5), quantile(local, 0.99)
	hp50, hp99 := quantile(hop, 0.5), quantile(hop, 0.99)
	fmt.Printf("elicitation answer → result on A's stream, %d tries each:\n", tries)
	fmt.Printf("  posted to A   p50 %v  p99 %v\n", lp50.Round(time.Microsecond), lp99.Round(time.Microsecond))
	fmt.Printf("  posted to B   p50 %v  p99 %v\n", hp50.Round(time.Microsecond), hp99.Round(time.Microsecond))
	fmt.Printf("  the hop adds  p50 %v\n", (hp50 - lp50).Round(time.Microsecond))

	end := func(kind string) ([]time.Duration, error) {
		var out []time.Duration
		for i := range tries {
			sid, err := c.session(ctx, a)
			if err != nil {
				return nil, err
			}
			if _, _, err := c.do(ctx, b, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); err != nil {
				return nil, err
			}
			ended := make(chan time.Time, 1)
			go func() {
				resp, err := c.post(ctx, a, sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}`)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				ended <- time.Now()
			}()
			if err := waitInFlight(ctx, a, sid); err != nil { // the handler runs on A
				return nil, err
			}
			start := time.Now()
			switch kind {
			case "cancel":
				_, _, err = c.do(ctx, b, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
			default:
				req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, b, nil)
				req.Header.Set("Mcp-Session-Id", sid)
				var resp *http.Response
				if resp, err = c.http.Do(req); err == nil {
					_ = resp.Body.Close()
				}
			}
			if err != nil {
				return nil, err
			}
			select {
			case t := <-ended:
				out = append(out, t.Sub(start))
			case <-time.After(10 * time.Second):
				return nil, fmt.Errorf("%s %d: A's request did not end within 10s", kind, i)
			}
		}
		return out, nil
	}
	for _, kind := range []string{"cancel", "delete"} {
		d, err := end(kind)
		if err != nil {
			return err
		}
		fmt.Printf("%-6s posted to B → A's request ends, %d tries: p50 %v  p99 %v  max %v\n", kind, tries,
			quantile(d, 0.5).Round(time.Microsecond), quantile(d, 0.99).Round(time.Microsecond), quantile(d, 1).Round(time.Microsecond))
	}
	return nil
}

// waitInFlight waits until A's debug page lists a request in flight of sid,
// so that the cancel is not timed against a request still on its way.
func waitInFlight(ctx context.Context, base, sid string) error {
	page := strings.TrimSuffix(base, "/mcp") + "/debug/vigil?format=json"
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		body, err := httpGet(ctx, page)
		if err != nil {
			return err
		}
		if bytes.Contains(body, []byte(`"tools/call sleep"`)) || bytes.Contains(body, []byte(`"sleep"`)) {
			if bytes.Contains(body, []byte(sid)) {
				return nil
			}
		}
		time.Sleep(time.Millisecond) // polling the page: the only view of A's requests from outside
	}
	return errors.New("the sleep call never showed in flight on A")
}

// quantile returns the q-quantile of ds (q 1: the maximum).
func quantile(ds []time.Duration, q float64) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return benchservice.Percentile(sorted, q)
}

// eventReader reads the data of an SSE stream's events.
type eventReader struct{ br *bufio.Reader }

func newEventReader(r io.Reader) *eventReader { return &eventReader{br: bufio.NewReader(r)} }

// next returns the data of the next event that has some.
func (e *eventReader) next() ([]byte, error) {
	var data []byte
	for {
		line, err := e.br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && len(data) > 0:
			return data, nil
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimSpace(line[5:])...)
		}
	}
}

// jsonMember returns the raw value of a JSON object's top-level member.
func jsonMember(obj []byte, name string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return ""
	}
	return string(m[name])
}

// usedMemory returns Redis's used_memory (INFO memory).
func usedMemory(ctx context.Context, url string) (int64, error) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		return 0, err
	}
	c := goredis.NewClient(opt)
	defer func() { _ = c.Close() }()
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("redis INFO memory has no used_memory")
}
