package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
	"github.com/vigil-mcp/vigil/internal/loadgen"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A gateway at a fixed rate (make bench-gateway, issue 81): what a call
// costs the gateway when calls are apart, the traffic most gateways carry,
// rather than at the most it can take. Each setting fronts one upstream
// with vigil (a process per session, its default), vigil
// -upstream-shared, and the leanest Go peer, TBXark/mcp-proxy, built from
// a git checkout (-tbxark: the module proxy refuses it); the load
// generator holds each pair to the same rate, interleaved, and reports
// CPU per call, p50 and p99, and the context switches and system calls per
// call. After the load and rateRest of quiet, each process's resident
// memory is read, split into what it allocated (anonymous) and the pages
// of its executable the kernel keeps mapped (file).

// rateSetting is one upstream and the rate its gateways are held to.
type rateSetting struct {
	name string  // "stdio" or "http"
	rate float64 // calls a second
}

// rateSettings are issue 81's: server-everything's echo over stdio at 50
// calls a second, an HTTP upstream at 200 and at 1,000.
var rateSettings = []rateSetting{{"stdio", 50}, {"http", 200}, {"http", 1000}}

// gatewayProc is a gateway (or the upstream itself) under measurement.
type gatewayProc struct {
	name string
	url  string
	cmd  *exec.Cmd
}

// runRates runs every setting of rateSettings; cfg.tbxark is a checkout
// of TBXark/mcp-proxy, or "" to measure vigil alone against the upstream.
func runRates(ctx context.Context, cfg config, dir string) (err error) {
	fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil and the load generator into %s\n", dir)
	if err := goBuild(ctx, cfg.goCmd, cfg.vigilSrc, dir, "github.com/vigil-mcp/vigil/cmd/vigil"); err != nil {
		return err
	}
	if err := goBuild(ctx, cfg.goCmd, "", dir, "github.com/vigil-mcp/vigil/cmd/vigil-bench/load", "github.com/vigil-mcp/vigil/cmd/vigil-bench/floor"); err != nil {
		return err
	}
	peer := ""
	if cfg.tbxark != "" {
		peer = filepath.Join(dir, "mcp-proxy")
		// Built as vigil is (static, trimmed, stripped), without vigil's
		// tag, which it does not need: what its release would ship.
		peerBuild := buildFlags{ldflags: shippedBuild.ldflags}
		build := exec.CommandContext(ctx, cfg.goCmd, append(append([]string{"build"}, peerBuild.args()...), "-o", peer, ".")...)
		build.Dir, build.Env, build.Stderr = cfg.tbxark, peerBuild.env(), os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building TBXark/mcp-proxy in %s: %w", cfg.tbxark, err)
		}
	}
	everything, err := filepath.Abs("cmd/vigil/testdata/everything/node_modules/.bin/mcp-server-everything")
	if err != nil {
		return err
	}
	fmt.Printf("vigil-bench  %s, gateways at fixed rates\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("load         2025-06-18 sessions, tools/call echo, %d clients on %d sessions, spaced evenly at each rate\n", cfg.rateClients, cfg.rateSessions)
	fmt.Printf("build        as deploy/Dockerfile ships vigil: CGO_ENABLED=0 go build %s (the peer without the tag)\n", strings.Join(shippedBuild.args(), " "))
	fmt.Printf("rest         resident memory after the load and %s of quiet (VmRSS: anonymous + the executable's file pages)\n", cfg.rateRest)
	if peer == "" {
		fmt.Printf("peer         TBXark/mcp-proxy not measured: give -tbxark a git checkout of it (make bench-gateway TBXARK_SRC=dir; the module proxy refuses the module)\n")
	}
	bin := filepath.Join(dir, "vigil")
	executables := []string{bin, filepath.Join(dir, "floor")}
	if peer != "" {
		executables = append(executables, peer)
	}
	if err := evictFromCache(executables...); err != nil {
		return err
	}
	fmt.Printf("cache        each executable is dropped from the page cache before it starts: read from disk, as after a deployment\n")
	for _, s := range rateSettings {
		if err := runRate(ctx, cfg, dir, bin, peer, everything, s); err != nil {
			return err
		}
	}
	return nil
}

// runRate measures one setting: it starts the upstream (HTTP) and the
// gateways in front of it, runs each gateway against the peer (or, with
// no peer, against the upstream directly), and then the gateway against
// the upstream directly for the latency a hop adds, and reports the memory
// at rest.
func runRate(ctx context.Context, cfg config, dir, bin, peer, everything string, s rateSetting) (err error) {
	fmt.Printf("\n== %s upstream, %.0f calls/s\n", s.name, s.rate)
	var procs []*gatewayProc
	defer func() {
		for _, p := range procs {
			err = errors.Join(err, stopProcess(p.cmd, p.name))
		}
	}()
	target := ""
	var direct, relay *gatewayProc
	loadExtra := []string{}
	switch s.name {
	case "stdio":
		if _, statErr := os.Stat(everything); statErr == nil {
			target = everything + " stdio"
			loadExtra = []string{"-echo-arguments", `{"message":"hello"}`, "-want", "Echo: hello"}
			fmt.Printf("upstream     @modelcontextprotocol/server-everything over stdio (make everything-deps)\n")
		} else {
			target = bin + " -stdio"
			fmt.Printf("upstream     vigil -stdio (server-everything is not installed: make everything-deps)\n")
		}
		fmt.Printf("direct       the upstream called over stdio by a client of its own, after the pairs\n")
		fmt.Printf("relay        the floor of a gateway: the floor relaying each tools/call to the upstream over stdio as it came (-relay)\n")
		cmd, url, err := startFloor(ctx, filepath.Join(dir, "floor"), "-relay", target)
		if err != nil {
			return fmt.Errorf("the relay: %w", err)
		}
		relay = &gatewayProc{name: "relay", url: url, cmd: cmd}
		procs = append(procs, relay)
	default:
		up, upURL, err := startVigil(ctx, bin, []string{"-http", "127.0.0.1:0"}, filepath.Join(dir, "upstream.log"))
		if err != nil {
			return err
		}
		direct = &gatewayProc{name: "direct", url: upURL, cmd: up}
		procs = append(procs, direct)
		target = upURL
		fmt.Printf("upstream     vigil's demo echo over Streamable HTTP, %s\n", upURL)
	}
	for _, g := range []struct {
		name string
		args []string
	}{
		{"vigil", nil},
		{"vigil-shared", []string{"-upstream-shared"}},
	} {
		args := append(append([]string{"-http", "127.0.0.1:0", "-upstream", "e=" + target}, g.args...), cfg.vigilArgs...)
		cmd, url, err := startVigil(ctx, bin, args, filepath.Join(dir, g.name+"-"+s.name+".log"))
		if err != nil {
			return err
		}
		procs = append(procs, &gatewayProc{name: g.name, url: url, cmd: cmd})
		if err := waitServing(ctx, url, loadExtra); err != nil {
			return fmt.Errorf("%s: %w", g.name, err)
		}
	}
	var tbx *gatewayProc
	if peer != "" {
		if tbx, err = startTBXark(ctx, peer, dir, s.name, target); err != nil {
			return err
		}
		procs = append(procs, tbx)
		if err := waitServing(ctx, tbx.url, loadExtra); err != nil {
			return fmt.Errorf("TBXark/mcp-proxy: %w", err)
		}
	}
	rate := strconv.FormatFloat(s.rate, 'f', -1, 64)
	loadArgs := append([]string{
		"-kernel-counts", "-rate", rate, "-workloads", "2025",
		"-clients", strconv.Itoa(cfg.rateClients), "-sessions", strconv.Itoa(cfg.rateSessions),
		"-rounds", strconv.Itoa(cfg.rateRounds), "-round", cfg.rateRound.String(), "-warmup", "2s",
	}, loadExtra...)
	for _, g := range procs {
		if g == direct || g == tbx || g == relay {
			continue
		}
		against := tbx
		if against == nil {
			against = direct
		}
		if against == nil {
			continue
		}
		if err := pairLoad(ctx, dir, against, g, loadArgs); err != nil {
			return err
		}
		if direct != nil && against != direct {
			if err := pairLoad(ctx, dir, direct, g, loadArgs); err != nil {
				return err
			}
		}
	}
	if s.name == "stdio" {
		var gateways []*gatewayProc
		for _, g := range procs {
			if g != tbx {
				gateways = append(gateways, g)
			}
		}
		if tbx != nil {
			gateways = append(gateways, tbx)
		}
		if err := directStdio(ctx, cfg, target, probeArgs(loadExtra), gateways, s); err != nil {
			return err
		}
	}
	select {
	case <-time.After(cfg.rateRest):
	case <-ctx.Done():
		return ctx.Err()
	}
	fmt.Printf("\nresident     after %s of quiet: VmRSS (anonymous + file), and the peak (VmHWM)\n", cfg.rateRest)
	for _, p := range procs {
		m, ok := benchservice.ResidentOf(p.cmd.Process.Pid)
		if !ok {
			continue
		}
		fmt.Printf("%14s  %s (%s + %s), peak %s\n", p.name, benchservice.MiB(m.RSS), benchservice.MiB(m.Anon), benchservice.MiB(m.File), benchservice.MiB(m.Peak))
	}
	return nil
}

// pairLoad runs the load generator on floor and g, interleaved.
func pairLoad(ctx context.Context, dir string, floor, g *gatewayProc, args []string) error {
	fmt.Println()
	load := exec.CommandContext(ctx, filepath.Join(dir, "load"), append([]string{
		"-floor", floor.url, "-floor-pid", strconv.Itoa(floor.cmd.Process.Pid), "-floor-name", floor.name,
		"-vigil", g.url, "-vigil-pid", strconv.Itoa(g.cmd.Process.Pid), "-vigil-name", g.name,
	}, args...)...)
	load.Stdout, load.Stderr = os.Stdout, os.Stderr
	if err := load.Run(); err != nil {
		return fmt.Errorf("load generator (%s against %s): %w", g.name, floor.name, err)
	}
	return nil
}

// startTBXark starts the peer's binary in front of target (a URL or a
// command line) on a free loopback port, in its streamable-http mode, and
// returns it with the URL of its endpoint for the upstream.
func startTBXark(ctx context.Context, bin, dir, setting, target string) (*gatewayProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	server := map[string]any{"url": target, "transportType": "streamable-http"}
	if !strings.HasPrefix(target, "http") {
		words := strings.Fields(target)
		server = map[string]any{"command": words[0], "args": words[1:]}
	}
	conf, err := json.Marshal(map[string]any{
		"mcpProxy": map[string]any{
			"baseURL": "http://" + addr, "addr": addr, "name": "bench", "version": "1",
			"type": "streamable-http", "options": map[string]any{"logEnabled": false},
		},
		"mcpServers": map[string]any{"e": server},
	})
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "tbxark-"+setting+".json")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "tbxark-"+setting+".log"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.CommandContext(ctx, bin, "-config", path)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &gatewayProc{name: "tbxark", url: "http://" + addr + "/e/", cmd: cmd}, nil
}

// waitServing calls echo at url, in a session of its own, until it
// answers (an upstream that starts slowly, such as a node server, is not
// listed at once), for up to a minute.
func waitServing(ctx context.Context, url string, loadExtra []string) error {
	args := probeArgs(loadExtra)
	deadline := time.Now().Add(time.Minute)
	for {
		err := probeEcho(ctx, url, args)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("echo at %s did not answer within a minute: %w", url, err)
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// probeArgs are the echo arguments and answer of the load generator's
// extra arguments loadExtra (-echo-arguments, -want), or vigil's echo's.
func probeArgs(loadExtra []string) echoArgs {
	args := echoArgs{arguments: `{"text":"hello"}`, want: `"text":"hello"`}
	for i := 0; i+1 < len(loadExtra); i += 2 {
		switch loadExtra[i] {
		case "-echo-arguments":
			args.arguments = loadExtra[i+1]
		case "-want":
			args.want = loadExtra[i+1]
		}
	}
	return args
}

// echoArgs are the arguments of a probing echo call and what its answer
// contains.
type echoArgs struct{ arguments, want string }

// probeEcho opens a session at url and calls echo in it once.
func probeEcho(ctx context.Context, url string, a echoArgs) error {
	client := loadgen.NewClient()
	defer client.CloseIdleConnections()
	sid, err := loadgen.OpenSession(client, url, protocol.Version20250618)
	if err != nil {
		return err
	}
	req := loadgen.SessionPost(url, sid, protocol.Version20250618, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":`+a.arguments+`}}`))
	var buf bytes.Buffer
	return loadgen.Do(client, req.WithContext(ctx), &buf, []byte(a.want))
}
