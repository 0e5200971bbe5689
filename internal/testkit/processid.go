package testkit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessID names the process pid of the caller's PID namespace for a
// test outside it: a sandboxed upstream's pid is its namespace's (1 for
// its first process, in every sandbox), so it reports this instead (its
// namespace, pid and start time, which a namespace's number, reused,
// does not repeat), and the test finds the pid it can signal with
// [HostPID].
func ProcessID(pid int) string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return strconv.Itoa(pid)
	}
	return strings.Trim(strings.TrimPrefix(ns, "pid:"), "[]") + "." + strconv.Itoa(pid) + "." + startTime("/proc/"+strconv.Itoa(pid)+"/stat")
}

// startTime returns a stat file's start time (its 22nd field).
func startTime(stat string) string {
	b, err := os.ReadFile(stat)
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(b), ") ") // the name may hold spaces
	if fields := strings.Fields(rest); ok && len(fields) > 19 {
		return fields[19]
	}
	return ""
}

// HostPID returns the pid, in the test's own PID namespace, of the
// process [ProcessID] named id.
func HostPID(id string) (int, error) {
	parts := strings.Split(id, ".")
	if len(parts) != 3 {
		return strconv.Atoi(id)
	}
	ns, inner, started := parts[0], parts[1], parts[2]
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
		if innerPID(filepath.Join(dir, "status")) == inner && startTime(filepath.Join(dir, "stat")) == started {
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
