package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/stdiopeer"
	"github.com/vigil-mcp/vigil/internal/loadgen"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The latency a gateway adds over stdio (issue 88): the upstream called
// directly by a client that speaks stdio, its own child process, against
// each gateway in front of another copy of it called over HTTP, at the
// same rate and in interleaved rounds. Each side is one client calling
// echo at evenly spaced times, so that a call never waits for another;
// the p50 each gateway adds is its p50 less the direct one.

// stdioClient calls echo on an MCP server over stdio, its child process.
type stdioClient struct {
	peer *stdiopeer.Peer
	args echoArgs
	id   int64
}

// startStdioClient starts the command line target and initializes a
// session with it.
func startStdioClient(ctx context.Context, target string, args echoArgs) (*stdioClient, error) {
	peer, err := stdiopeer.Start(ctx, target, "vigil-bench", protocol.Version20250618)
	if err != nil {
		return nil, err
	}
	return &stdioClient{peer: peer, args: args}, nil
}

// echoCall is the tools/call echo request with id and the arguments of a.
func echoCall(id int64, a echoArgs) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"tools/call","params":{"name":"echo","arguments":` + a.arguments + `}}`)
}

// call calls echo once and returns how long the answer took; the answer
// must contain args.want.
func (c *stdioClient) call() (time.Duration, error) {
	c.id++
	id := strconv.AppendInt(nil, c.id, 10)
	start := time.Now()
	answer, err := c.peer.Round(echoCall(c.id, c.args), id)
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if !bytes.Contains(answer, []byte(c.args.want)) {
		return 0, fmt.Errorf("answer to %s without %q: %s", id, c.args.want, answer)
	}
	return elapsed, nil
}

// close ends the upstream.
func (c *stdioClient) close() { c.peer.Close() }

// httpEchoClient is one 2025-06-18 session's client of a gateway.
type httpEchoClient struct {
	client *http.Client
	url    string
	sid    string
	args   echoArgs
	buf    bytes.Buffer
	id     int64
}

func (c *httpEchoClient) call() (time.Duration, error) {
	c.id++
	req := loadgen.SessionPost(c.url, c.sid, protocol.Version20250618, echoCall(c.id, c.args))
	start := time.Now()
	if err := loadgen.Do(c.client, req, &c.buf, []byte(c.args.want)); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// paced calls call at rate calls a second, evenly spaced, for d, and
// returns the latencies.
func paced(ctx context.Context, rate float64, d time.Duration, call func() (time.Duration, error)) ([]time.Duration, error) {
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var lat []time.Duration
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= d {
			return lat, nil
		}
		if wait := time.Until(at); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		l, err := call()
		if err != nil {
			return nil, err
		}
		lat = append(lat, l)
	}
}

// warmCalls is how many calls each side of directStdio makes back to back
// before its paced warm-up: a node upstream answers faster once it has
// compiled its hot code, over its first thousands of calls, and a shared
// upstream has served the load phases before (issue 88: without it, the
// shared gateways' upstream was the warmer, and they looked faster than
// the others for it).
const warmCalls = 5000

// directStdio runs the upstream target (a command line) as a child of its
// own, and the gateways, at s.rate, cfg.rateRounds rounds of cfg.rateRound
// each, interleaved after a warm-up each; it prints each one's p50 and p99
// and the p50 each gateway adds over the direct calls.
func directStdio(ctx context.Context, cfg config, target string, args echoArgs, gateways []*gatewayProc, s rateSetting) error {
	direct, err := startStdioClient(ctx, target, args)
	if err != nil {
		return fmt.Errorf("the upstream over stdio: %w", err)
	}
	defer direct.close()
	type side struct {
		name string
		call func() (time.Duration, error)
		lat  []time.Duration
	}
	sides := []*side{{name: "direct", call: direct.call}}
	for _, g := range gateways {
		c := &httpEchoClient{client: loadgen.NewClient(), url: g.url, args: args}
		defer c.client.CloseIdleConnections()
		if c.sid, err = loadgen.OpenSession(c.client, g.url, protocol.Version20250618); err != nil {
			return fmt.Errorf("%s: %w", g.name, err)
		}
		sides = append(sides, &side{name: g.name, call: c.call})
	}
	for _, sd := range sides {
		for range warmCalls {
			if _, err := sd.call(); err != nil {
				return fmt.Errorf("%s warm-up: %w", sd.name, err)
			}
		}
		if _, err := paced(ctx, s.rate, 2*time.Second, sd.call); err != nil {
			return fmt.Errorf("%s warm-up: %w", sd.name, err)
		}
	}
	for range cfg.rateRounds {
		for _, sd := range sides {
			lat, err := paced(ctx, s.rate, cfg.rateRound, sd.call)
			if err != nil {
				return fmt.Errorf("%s: %w", sd.name, err)
			}
			sd.lat = append(sd.lat, lat...)
		}
	}
	fmt.Printf("\ndirect       the upstream called over stdio by one client, its own child process, against each gateway\n")
	fmt.Printf("             over HTTP by one client, each at %.0f calls/s, %d rounds of %s interleaved, after %d calls back\n", s.rate, cfg.rateRounds, cfg.rateRound, warmCalls)
	fmt.Printf("             to back and 2s at the rate each (every upstream process as warm: node compiles its hot code)\n")
	for _, sd := range sides {
		slices.Sort(sd.lat)
	}
	p50 := func(sd *side) time.Duration { return benchservice.Percentile(sd.lat, 0.5) }
	over := func(sd, base *side) string {
		if sd == base || base == nil {
			return "-"
		}
		return fmt.Sprintf("%+.2f ms", float64(p50(sd)-p50(base))/float64(time.Millisecond))
	}
	var relay *side
	for _, sd := range sides {
		if sd.name == "relay" {
			relay = sd
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintf(tw, "\tcalls\tp50\tp99\tp50 over direct\tover relay\t\n")
	for _, sd := range sides {
		overRelay := "-"
		if sd != sides[0] {
			overRelay = over(sd, relay)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", sd.name, len(sd.lat), benchservice.Millis(p50(sd)), benchservice.Millis(benchservice.Percentile(sd.lat, 0.99)), over(sd, sides[0]), overRelay)
	}
	return tw.Flush()
}
