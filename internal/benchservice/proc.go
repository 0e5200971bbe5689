package benchservice

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RSSOf returns the resident set size of process pid in bytes, from the
// VmRSS line of /proc/<pid>/status; false outside Linux or if the process
// is gone.
func RSSOf(pid int) (int64, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	return ParseVMRSS(raw)
}

// ParseVMRSS returns the VmRSS of a /proc/<pid>/status file's contents in
// bytes (the file gives kB); false if there is no such line.
func ParseVMRSS(status []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// ProcessCPU returns the CPU time, user and system, the calling process
// has used so far: the handler benchmarks report it per request
// ("cpu-ns/op"), which counts what runs beside the benchmark's goroutine
// (the garbage collector, the server's outcome batches) as ns/op does not.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MachineSteal returns the CPU time the hypervisor has given other guests
// while this machine's CPUs wanted it ("steal", from /proc/stat), summed
// over its CPUs since boot; false outside Linux or without the field. On
// a shared virtual machine it is the noise of a benchmark's rounds: the
// rounds it falls in run slower for reasons of no server's.
func MachineSteal() (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	return ParseSteal(raw)
}

// ParseSteal returns the steal time of a /proc/stat file's contents: the
// eighth figure of its "cpu" line, in USER_HZ ticks (100 a second on
// Linux); false if there is none.
func ParseSteal(stat []byte) (time.Duration, bool) {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "cpu ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 8 {
			return 0, false
		}
		ticks, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			return 0, false
		}
		return time.Duration(ticks) * (time.Second / 100), true
	}
	return 0, false
}
