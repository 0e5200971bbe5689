package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The footprint runs: each handler benchmark runs footprintShort and then
// footprintLong requests under cachegrind, and the difference over the
// difference in requests is what one request costs, without the process's
// start, the benchmark's setup and the first requests' warming.
const (
	footprintShort = 2000
	footprintLong  = 7000
)

// footprintEvents are the cachegrind totals the report shows, as
// cachegrind's summary names them.
var footprintEvents = []struct{ name, label string }{
	{"I   refs", "instructions"},
	{"I1  misses", "L1i misses"},
	{"D1  misses", "L1d misses"},
	{"Mispredicts", "mispredicts"},
}

// runFootprint measures what one request costs the shipped service's
// handler (cmd/vigil's BenchmarkServiceHandler) and the floor's handler
// (BenchmarkFloorHandler) under cachegrind's simulation of the machine's
// caches and branch predictor: instructions, L1 instruction- and
// data-cache misses, mispredicted branches. The counts are the same from
// one run to the next, unlike times on a shared machine, so that a change
// of a few percent shows; and instruction-cache misses are where vigil's
// handler spends most of the time it takes beyond the floor's.
func runFootprint(ctx context.Context, cfg config, dir string) error {
	if _, err := exec.LookPath("valgrind"); err != nil {
		return fmt.Errorf("valgrind (cachegrind) not found: install the valgrind package (make bench-footprint does): %w", err)
	}
	fmt.Fprintf(os.Stderr, "vigil-bench: building the handler benchmarks into %s\n", dir)
	vigil, floor := filepath.Join(dir, "vigil.test"), filepath.Join(dir, "floor.test")
	if err := goTestBinary(ctx, cfg.goCmd, cfg.vigilSrc, vigil, "./cmd/vigil"); err != nil {
		return err
	}
	if err := goTestBinary(ctx, cfg.goCmd, "", floor, "./cmd/vigil-bench/floor"); err != nil {
		return err
	}
	fmt.Printf("per request, in process, under cachegrind (%d - %d requests; GOGC=off, GOMAXPROCS=1)\n\n", footprintLong, footprintShort)
	fmt.Printf("%-10s %-6s %14s %12s %12s %12s\n", "workload", "", footprintEvents[0].label, footprintEvents[1].label, footprintEvents[2].label, footprintEvents[3].label)
	// Each runs in its package's directory, as go test runs it.
	vigilDir := filepath.Join(cfg.vigilSrc, "cmd", "vigil")
	floorDir := filepath.Join("cmd", "vigil-bench", "floor")
	for _, w := range []string{"2025", "2026"} {
		v, err := perRequest(ctx, vigilDir, vigil, "ServiceHandler/"+w+"$")
		if err != nil {
			return err
		}
		f, err := perRequest(ctx, floorDir, floor, "FloorHandler/"+w+"$")
		if err != nil {
			return err
		}
		fmt.Printf("%-10s %-6s", w, "vigil")
		for _, n := range v {
			fmt.Printf(" %12.0f", n)
		}
		fmt.Printf("\n%-10s %-6s", "", "floor")
		for _, n := range f {
			fmt.Printf(" %12.0f", n)
		}
		fmt.Printf("\n%-10s %-6s", "", "ratio")
		for i := range v {
			fmt.Printf(" %11.2fx", v[i]/f[i])
		}
		fmt.Println()
	}
	return nil
}

// goTestBinary compiles the tests of pkg, in the module at src ("" for
// this one), to out, without cgo: valgrind runs a static binary as is.
func goTestBinary(ctx context.Context, goCmd, src, out, pkg string) error {
	build := exec.CommandContext(ctx, goCmd, "test", "-c", "-o", out, pkg)
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go test -c %s in %q: %w", pkg, src, err)
	}
	return nil
}

// perRequest runs the benchmarks of bin that match bench, in dir, under
// cachegrind for footprintShort and footprintLong requests, and returns
// the footprintEvents of one request.
func perRequest(ctx context.Context, dir, bin, bench string) ([]float64, error) {
	short, err := cachegrind(ctx, dir, bin, bench, footprintShort)
	if err != nil {
		return nil, err
	}
	long, err := cachegrind(ctx, dir, bin, bench, footprintLong)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(footprintEvents))
	for i := range out {
		out[i] = float64(long[i]-short[i]) / (footprintLong - footprintShort)
	}
	return out, nil
}

// cachegrind runs the benchmarks of bin that match bench, in dir, for n
// requests each under cachegrind and returns its totals of footprintEvents.
// Asynchronous preemption is off (valgrind does not deliver its signals
// reliably), and so is the collector, so that a request's count does not
// depend on when a collection falls.
func cachegrind(ctx context.Context, dir, bin, bench string, n int) ([]int64, error) {
	cmd := exec.CommandContext(ctx, "valgrind", "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
		"--cachegrind-out-file="+os.DevNull,
		bin, "-test.run=^$", "-test.bench="+bench, "-test.benchtime="+strconv.Itoa(n)+"x")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1", "GOGC=off", "GOMAXPROCS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cachegrind %s -test.bench %s: %w\n%s", filepath.Base(bin), bench, err, stderr.String())
	}
	totals := make([]int64, len(footprintEvents))
	for i, e := range footprintEvents {
		v, ok := cachegrindTotal(stderr.String(), e.name)
		if !ok {
			return nil, fmt.Errorf("cachegrind %s: no %q total in its summary:\n%s", filepath.Base(bin), e.name, stderr.String())
		}
		totals[i] = v
	}
	return totals, nil
}

// cachegrindTotal reads the total of the event named name from
// cachegrind's summary ("==123== I1  misses:   5,816,672").
func cachegrindTotal(summary, name string) (int64, bool) {
	re := regexp.MustCompile(`(?m)^==\d+== ` + regexp.QuoteMeta(name) + `:\s+([\d,]+)`)
	m := re.FindStringSubmatch(summary)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	return v, err == nil
}
