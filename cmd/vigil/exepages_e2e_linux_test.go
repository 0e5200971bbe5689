package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestExecutablePagesLeaveAtRest checks that the shipped vigil, at rest,
// holds a fraction of its executable resident (package exepages, started
// by the GC tuner): starting up touches most of it.
func TestExecutablePagesLeaveAtRest(t *testing.T) {
	t.Parallel() // a rest is 30 s (gcheadroom.RestPages)
	svc := startService(t, "-http", "127.0.0.1:0")
	pid := svc.cmd.Process.Pid
	started := exeResident(t, pid)
	require.Greater(t, started, uint64(8<<20), "vigil holds little of its executable once started")
	for range 900 {
		if exeResident(t, pid) < started/4 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("vigil at rest holds %d KiB of its executable, of %d KiB once started", exeResident(t, pid)>>10, started>>10)
}

// exeResident returns the bytes of vigil's executable resident in the
// process pid, in its mappings without write permission.
func exeResident(t *testing.T, pid int) uint64 {
	t.Helper()
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	require.NoError(t, err)
	var sum uint64
	ours := false
	for line := range bytes.Lines(smaps) {
		f := strings.Fields(string(line))
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			ours = len(f) == 6 && f[5] == vigilBin && f[1][1] == '-'
		case ours && len(f) == 3 && f[0] == "Rss:":
			kb, err := strconv.ParseUint(f[1], 10, 64)
			require.NoError(t, err)
			sum += kb << 10
		}
	}
	return sum
}
