package main

import (
	"testing"
	"time"
)

// clientV2Dir holds the TypeScript SDK v2 harness: package.json and
// package-lock.json (@modelcontextprotocol/client and ext-tasks, pinned),
// client-v2.mjs and its feature checks under checks/. `make test` installs
// its node_modules.
const clientV2Dir = "testdata/clientv2"

// TestInteropTypeScriptV2 drives vigil-everything with the TypeScript SDK v2
// client and ext-tasks over Streamable HTTP in both protocol eras and over
// stdio in both: tools of every content type, protocol errors, logging,
// progress, sampling, elicitation and roots, resources and templates,
// subscriptions (resources/subscribe, subscriptions/listen), list_changed,
// prompts, completion, cancellation and tasks (both wire formats). Each
// check in the script asserts exact results; it exits non-zero on the first
// that fails.
func TestInteropTypeScriptV2(t *testing.T) {
	node := requireNodeHarness(t, clientV2Dir)
	url := startHTTP(t)
	for _, tc := range []struct{ name, target, era string }{
		{"http-legacy", url, "legacy"},
		{"http-modern", url, "modern"},
		{"stdio-legacy", everythingBin, "legacy"},
		{"stdio-modern", everythingBin, "modern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runNodeHarness(t, node, clientV2Dir, 2*time.Minute, "client-v2.mjs", tc.target, tc.era)
		})
	}
}
