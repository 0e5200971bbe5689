package main

import (
	"bytes"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// kernelCounts are what a server asked of the kernel over some rounds:
// its context switches (voluntary and involuntary, over its threads, from
// /proc/<pid>/task/*/status) and its system calls (counted by perf stat's
// raw_syscalls:sys_enter tracepoint; -1 when perf cannot count them here).
type kernelCounts struct {
	switches int64
	syscalls int64
	calls    int64 // requests answered in those rounds
}

// add adds one round's counts; a round without a syscall count makes the
// total unknown.
func (k *kernelCounts) add(switches, syscalls, calls int64) {
	k.switches += switches
	if syscalls < 0 || k.syscalls < 0 {
		k.syscalls = -1
	} else {
		k.syscalls += syscalls
	}
	k.calls += calls
}

// perCall formats n per call, or "-" when unknown.
func (k kernelCounts) perCall(n int64) string {
	if n < 0 || k.calls == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(n)/float64(k.calls), 'f', 1, 64)
}

// countSyscalls starts counting pid's system calls with perf stat and
// returns the function that stops and returns the count (-1 when perf is
// missing or may not trace here). It waits until perf has attached.
func countSyscalls(pid int) func() int64 {
	path, err := exec.LookPath("perf")
	if err != nil {
		return func() int64 { return -1 }
	}
	var out bytes.Buffer
	cmd := exec.Command(path, "stat", "-x", ",", "-e", "raw_syscalls:sys_enter", "-p", strconv.Itoa(pid))
	cmd.Stderr = &out
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return func() int64 { return -1 }
	}
	time.Sleep(100 * time.Millisecond) // perf attaches to each thread
	return func() int64 {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
		for line := range strings.SplitSeq(out.String(), "\n") {
			fields := strings.Split(line, ",")
			if len(fields) > 2 && strings.Contains(line, "raw_syscalls:sys_enter") {
				if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return n
				}
			}
		}
		return -1
	}
}
