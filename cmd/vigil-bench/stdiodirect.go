package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"slices"
	"strconv"
	"syscall"
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

// httpEchoClient is one 2025-06-18 session's client of a gateway. It
// writes each call on its own connection and reads the answer on the
// calling goroutine, as stdioClient does on its pipes, with net/http's
// request writer and response reader: what it times is the HTTP exchange
// and the gateway. An http.Client would add its Transport's own work to
// every gateway's figure and none to the direct one: the request handed
// to the connection's writing goroutine and the answer back from its
// reading one, each a wake-up of another thread, 82–88 µs of each call's
// p50 at 50 calls a second (docs/perf/ROUNDS.md).
type httpEchoClient struct {
	addr   string // host:port
	conn   net.Conn
	r      *bufio.Reader
	onConn int // the answers read on conn
	dials  int // the connections dialed, each before a call, untimed
	url    string
	sid    string
	args   echoArgs
	buf    bytes.Buffer
	id     int64
}

// redials is how many connections the client dialed after its first.
func (c *httpEchoClient) redials() int { return max(c.dials-1, 0) }

// dialEchoClient opens a session at url with an http.Client; the calls'
// connection is dialed by the first (a server may close a connection that
// sends no request for a while).
func dialEchoClient(url string, args echoArgs) (*httpEchoClient, error) {
	client := loadgen.NewClient()
	defer client.CloseIdleConnections()
	sid, err := loadgen.OpenSession(client, url, protocol.Version20250618)
	if err != nil {
		return nil, err
	}
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, err
	}
	return &httpEchoClient{addr: u.Host, url: url, sid: sid, args: args}, nil // the bench's gateways listen on ports it names
}

// call calls echo once and returns how long the answer took. It goes on
// the client's connection, dialed first if there is none; when the server
// has closed one that carried calls before (idle, or after an answer with
// Connection: close), the call is made again, once, on a new one, and
// timed there.
func (c *httpEchoClient) call() (time.Duration, error) {
	c.id++
	req := loadgen.SessionPost(c.url, c.sid, protocol.Version20250618, echoCall(c.id, c.args))
	for {
		if c.conn == nil {
			conn, err := net.Dial("tcp", c.addr)
			if err != nil {
				return 0, err
			}
			c.conn, c.r, c.onConn = conn, bufio.NewReader(conn), 0
			c.dials++
		}
		d, err := c.exchange(req)
		if err == nil {
			return d, nil
		}
		reused := c.onConn > 0
		c.close()
		if !reused || !closedUnder(err) {
			return 0, fmt.Errorf("call %d: %w", c.id, err)
		}
		req = loadgen.SessionPost(c.url, c.sid, protocol.Version20250618, echoCall(c.id, c.args))
	}
}

// exchange writes req on the connection and reads its answer.
func (c *httpEchoClient) exchange(req *http.Request) (time.Duration, error) {
	start := time.Now()
	if err := req.Write(c.conn); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.r, req)
	if err != nil {
		return 0, err
	}
	c.onConn++
	c.buf.Reset()
	_, err = c.buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.Close {
		c.close()
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(c.buf.Bytes(), []byte(c.args.want)) {
		return 0, fmt.Errorf("%s: %s", resp.Status, c.buf.Bytes())
	}
	return elapsed, nil
}

// closedUnder reports whether err is a connection closed by the server
// before any of the answer came.
func closedUnder(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// close closes the connection, if open.
func (c *httpEchoClient) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
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
		http *httpEchoClient // nil for the direct side
	}
	sides := []*side{{name: "direct", call: direct.call}}
	for _, g := range gateways {
		c, err := dialEchoClient(g.url, args)
		if err != nil {
			return fmt.Errorf("%s: %w", g.name, err)
		}
		defer c.close()
		sides = append(sides, &side{name: g.name, call: c.call, http: c})
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
	fmt.Printf("             to back and 2s at the rate each (every upstream process as warm: node compiles its hot code);\n")
	fmt.Printf("             each client writes a call and reads its answer on one goroutine, on its pipe or its connection\n")
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
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, sd := range sides {
		if sd.http != nil && sd.http.redials() > 0 {
			fmt.Printf("redialed     %s closed its client's connection %d times (idle, or Connection: close); each call after it dialed first, untimed\n", sd.name, sd.http.redials())
		}
	}
	return nil
}
