package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// scaleConfig is what the -scale flags select.
type scaleConfig struct {
	sessions     int
	fanouts      int
	phases       string
	clients      string // the overload phase's concurrency levels
	reps         int    // the overload phase's reps honoring Retry-After
	round        time.Duration
	settle       time.Duration
	payloadBytes int
	callers      string // the callers phase's clients: heavy,light
}

// scaleFileMargin is the descriptors a process needs beyond one per
// stream: listeners, logs, the other phases' connections.
const scaleFileMargin = 1024

// runScale builds cmd/vigil, cmd/vigil-everything, the floor and the scale
// client, and runs each phase of cfg.scale against fresh servers: the
// phase's vigil and a floor; then it prints the PASS and FAIL lines of
// every phase together.
func runScale(ctx context.Context, cfg config, dir string) error {
	sc := cfg.scale
	if sc.reps <= 0 {
		return fmt.Errorf("-overload-reps %d: want a positive number", sc.reps)
	}
	files, err := raiseFileLimit()
	if err != nil {
		return err
	}
	if sc.sessions+scaleFileMargin > files {
		fmt.Fprintf(os.Stderr, "vigil-bench: the file-descriptor limit is %d: -scale-sessions lowered from %d to %d\n", files, sc.sessions, max(files-scaleFileMargin, 1))
		sc.sessions = max(files-scaleFileMargin, 1)
	}
	fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil, cmd/vigil-everything, the floor and the scale client into %s\n", dir)
	pkgs := []string{"github.com/vigil-mcp/vigil/cmd/vigil-bench/floor", "github.com/vigil-mcp/vigil/cmd/vigil-bench/scale"}
	if cfg.vigilSrc == "" {
		pkgs = append(pkgs, "github.com/vigil-mcp/vigil/cmd/vigil", "github.com/vigil-mcp/vigil/cmd/vigil-everything")
	}
	if err := goBuild(ctx, cfg.goCmd, "", dir, pkgs...); err != nil {
		return err
	}
	if cfg.vigilSrc != "" {
		fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil and cmd/vigil-everything from %s\n", cfg.vigilSrc)
		if err := goBuild(ctx, cfg.goCmd, cfg.vigilSrc, dir, "./cmd/vigil", "./cmd/vigil-everything"); err != nil {
			return err
		}
	}
	// One load generator stands for all the clients. The streams come from
	// many loopback addresses, under vigil-everything's per-caller session
	// quota; its -max-sessions is raised above them, and list_changed goes
	// out at once, with no event store, as from vigil. cmd/vigil's
	// per-caller quotas (sessions, in flight, tool share, bytes) would
	// refuse the overload and payload clients as one caller, so they are
	// off.
	streamsArgs := []string{"-http", "127.0.0.1:0", "-max-sessions", strconv.Itoa(sc.sessions + 64), "-resumable=false", "-list-changed-delay", "0"}
	vigilArgs := append([]string{"-http", "127.0.0.1:0", "-quota-sessions", "0", "-quota-in-flight", "0", "-quota-tool-share", "0", "-quota-bytes", "0"}, cfg.vigilArgs...)
	// The callers phase has two callers, each under vigil's default
	// quotas, whose in-flight count its shedding refuses the heavier by.
	callersArgs := append([]string{"-http", "127.0.0.1:0"}, cfg.vigilArgs...)
	fmt.Printf("vigil-bench -scale  %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("machine      %s/%s, %d CPUs%s, %s; the load runs on the same CPUs\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version())
	fmt.Printf("files        RLIMIT_NOFILE raised to %d (the hard limit) for this run and the processes it starts\n", files)
	fmt.Printf("streams      vigil is cmd/vigil-everything %s\n", strings.Join(streamsArgs, " "))
	fmt.Printf("             (test_trigger_tool_change sends list_changed on the shipped service's path)\n")
	fmt.Printf("overload,    vigil is cmd/vigil %s, defaults otherwise\n", strings.Join(vigilArgs, " "))
	fmt.Printf("payload      (-max-body and -max-result-bytes, 4 MiB, admit the payload as they are)\n")
	fmt.Printf("callers      vigil is cmd/vigil %s, defaults otherwise (quotas on); callers on loopback addresses\n", strings.Join(callersArgs, " "))
	fmt.Printf("quotas       off on vigil: one load generator stands for many callers, which its per-caller quotas\n")
	fmt.Printf("             would refuse as one (the streams phase spreads its sessions over loopback addresses)\n")
	fmt.Printf("floor        cmd/vigil-bench/floor: plain net/http; each GET stream waits on a broadcast\n")
	fmt.Printf("servers      started afresh for each phase, vigil's and the floor's logs in %s\n", dir)

	var verdicts []string
	for phase := range strings.SplitSeq(sc.phases, ",") {
		phase = strings.TrimSpace(phase)
		bin, args := "vigil", vigilArgs
		switch phase {
		case "streams":
			bin, args = "vigil-everything", streamsArgs
		case "callers":
			args = callersArgs
		case "overload", "payload":
		default:
			return fmt.Errorf("-scale-phases: unknown phase %q (want streams, overload, payload or callers)", phase)
		}
		out, err := runScalePhase(ctx, cfg, dir, phase, bin, args)
		if err != nil {
			return fmt.Errorf("phase %s: %w", phase, err)
		}
		verdicts = append(verdicts, verdictLines(out)...)
	}
	fmt.Printf("\nacceptance   issue 45 (issue 88's 90%% goodput at the top level), vigil against the floor, from this one run (the issues ask for the median of 3)\n")
	for _, v := range verdicts {
		fmt.Println(v)
	}
	return nil
}

// runScalePhase starts bin with args and a floor, runs the scale client's
// phase against them, copying its report to standard output, stops them
// and returns the report.
func runScalePhase(ctx context.Context, cfg config, dir, phase, bin string, args []string) (report []byte, err error) {
	server, serverURL, err := startLogged(ctx, filepath.Join(dir, bin), args, filepath.Join(dir, phase+"-"+bin+".log"))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, stopProcess(server, bin)) }()
	floor, floorURL, err := startFloor(ctx, filepath.Join(dir, "floor"))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, stopProcess(floor, "floor")) }()
	sc := cfg.scale
	client := exec.CommandContext(ctx, filepath.Join(dir, "scale"), "-phase", phase,
		"-vigil", serverURL, "-vigil-pid", strconv.Itoa(server.Process.Pid),
		"-floor", floorURL, "-floor-pid", strconv.Itoa(floor.Process.Pid),
		"-sessions", strconv.Itoa(sc.sessions), "-fanouts", strconv.Itoa(sc.fanouts), "-settle", sc.settle.String(),
		"-clients", sc.clients, "-reps", strconv.Itoa(sc.reps), "-round", sc.round.String(), "-payload-bytes", strconv.Itoa(sc.payloadBytes))
	if heavy, light, ok := strings.Cut(sc.callers, ","); ok {
		client.Args = append(client.Args, "-heavy-clients", heavy, "-light-clients", light)
	}
	var buf bytes.Buffer
	client.Stdout, client.Stderr = io.MultiWriter(os.Stdout, &buf), os.Stderr
	if err := client.Run(); err != nil {
		return nil, fmt.Errorf("scale client: %w", err)
	}
	return buf.Bytes(), nil
}

// verdictLines returns the PASS and FAIL lines of a phase's report.
func verdictLines(report []byte) []string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(report))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "PASS  ") || strings.HasPrefix(line, "FAIL  ") {
			lines = append(lines, line)
		}
	}
	return lines
}

// raiseFileLimit raises this process's soft RLIMIT_NOFILE to its hard
// limit and returns it. Setting it explicitly (the Go runtime raises it
// too, but restores the original in the processes it starts) makes the
// servers and the scale client inherit it.
func raiseFileLimit() (int, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("RLIMIT_NOFILE: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("raising RLIMIT_NOFILE to %d: %w", lim.Max, err)
	}
	return int(min(lim.Max, 1<<30)), nil
}
