package testkit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessID names the calling process, pid among them, for a test outside
// its PID namespace: a sandboxed upstream's pid is its namespace's (1 for
// its first process, in every sandbox), so it reports this instead, and
// the test finds the pid it can signal with [HostPID].
func ProcessID(pid int) string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return strconv.Itoa(pid)
	}
	return strings.Trim(strings.TrimPrefix(ns, "pid:"), "[]") + "." + strconv.Itoa(pid)
}

// HostPID returns the pid, in the test's own PID namespace, of the
// process [ProcessID] named id.
func HostPID(id string) (int, error) {
	ns, inner, ok := strings.Cut(id, ".")
	if !ok {
		return strconv.Atoi(id)
	}
	paths, err := filepath.Glob("/proc/[0-9]*/ns/pid")
	if err != nil {
		return 0, err
	}
	for _, p := range paths {
		link, err := os.Readlink(p)
		if err != nil || strings.Trim(strings.TrimPrefix(link, "pid:"), "[]") != ns {
			continue
		}
		dir := filepath.Dir(filepath.Dir(p))
		if innerPID(filepath.Join(dir, "status")) == inner {
			return strconv.Atoi(filepath.Base(dir))
		}
	}
	return 0, fmt.Errorf("no process %s", id)
}

// innerPID returns the last pid of a status file's NSpid line: the
// process's pid in its own namespace.
func innerPID(status string) string {
	f, err := os.Open(status)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "NSpid:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				return fields[len(fields)-1]
			}
		}
	}
	return ""
}
