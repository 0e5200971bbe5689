package streamabletest

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
func ProcessCPU() (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
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
