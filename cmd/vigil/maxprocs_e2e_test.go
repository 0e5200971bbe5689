package main

import (
	"net/http"
	"os"
	"runtime"
	"testing"
)

// TestProcsFollowTheLoadAtRest checks that the shipped vigil, quiet, runs
// on one P (package maxprocs), as its own /metrics say. (A GOMAXPROCS the
// operator set is kept: TestStartLeavesTheOperatorsSetting.)
func TestProcsFollowTheLoadAtRest(t *testing.T) {
	if _, set := os.LookupEnv("GOMAXPROCS"); set || runtime.NumCPU() < 2 {
		t.Skip("GOMAXPROCS set, or one CPU: nothing to follow")
	}
	svc := startService(t, "-http", "127.0.0.1:0")
	waitMetrics(t, http.DefaultClient, svc.base, func(m string) bool {
		return metricValue(m, "go_sched_gomaxprocs_threads") == 1
	})
}
