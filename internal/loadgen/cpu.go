package loadgen

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU returns the CPU time (user and system) the process has used
// so far, read from /proc/self/stat at 10 ms resolution; false where there
// is no such file (outside Linux).
func ProcessCPU() (time.Duration, bool) { return readCPU("/proc/self/stat") }

// CPUOf is [ProcessCPU] for the process pid, such as a server under load
// started by the caller: read from /proc/<pid>/stat; false where there is
// no such file (outside Linux, or the process is gone).
func CPUOf(pid int) (time.Duration, bool) {
	return readCPU("/proc/" + strconv.Itoa(pid) + "/stat")
}

// readCPU reads utime and stime from the stat file at path.
func readCPU(path string) (time.Duration, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	return ParseStatCPU(raw)
}

// ParseStatCPU returns utime+stime from the contents of a /proc/<pid>/stat
// file, counting USER_HZ ticks as 10 ms (their value on Linux); false if
// raw is not such a file.
func ParseStatCPU(raw []byte) (time.Duration, bool) {
	i := bytes.LastIndexByte(raw, ')') // the command name may hold spaces
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(raw[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick, true
}
