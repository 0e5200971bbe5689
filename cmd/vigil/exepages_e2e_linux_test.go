package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
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
// process pid (testkit.ExeResident).
func exeResident(t *testing.T, pid int) uint64 {
	t.Helper()
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	require.NoError(t, err)
	return testkit.ExeResident(t, smaps, vigilBin)
}
