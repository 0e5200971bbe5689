//go:build !linux

package main

// escapeUpstreamEnv names the hostile upstream of the sandbox's test,
// which runs on Linux only.
const escapeUpstreamEnv = "VIGIL_TEST_ESCAPE_UPSTREAM"

// escapeUpstream fails: sandboxes are Linux's.
func escapeUpstream() int { return 1 }
