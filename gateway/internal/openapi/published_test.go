//go:build unix

package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/internal/vocab"
)

// stripeMock is the Go module whose embedded/openapi/spec3.json is
// Stripe's published description (stripe/openapi's), as the Makefile's
// published-deps target downloads it into the module cache.
const stripeMock = "github.com/stripe/stripe-mock@v0.203.0"

// publishedDescription returns the path of a published description, or
// skips t (fails it under CI=true) when it is absent, naming the make
// target that fetches it.
func publishedDescription(t *testing.T, name string) string {
	t.Helper()
	testkit.External(t, name+"'s published OpenAPI description")
	var path string
	switch name {
	case "GitHub":
		path = filepath.Join("testdata", "published", "node_modules", "@octokit", "openapi", "generated", "api.github.com.json")
	case "Stripe":
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		require.NoError(t, err)
		path = filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(stripeMock), "embedded", "openapi", "spec3.json")
	}
	if _, err := os.Stat(path); err != nil {
		msg := name + "'s published OpenAPI description is missing (" + path + "): run `make published-deps`"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// TestLoadGitHubAndStripe loads GitHub's published REST description
// (@octokit/openapi 23.0.2, OpenAPI 3.0.3, about 1,100 operations) and
// Stripe's (stripe/openapi's spec3.json as stripe-mock v0.203.0 embeds
// it, OpenAPI 3.0.0): each loads within 30 s; every operation is a tool
// under a unique name, valid by MCP's rule, of at most MaxToolNameLen
// bytes; every input and output schema compiles as JSON Schema 2020-12
// with the meta-schema checked (santhosh-tekuri/jsonschema). It logs the
// load's time, the bytes it allocated and the heap the loaded API holds:
// docs/performance.md has the figures.
func TestLoadGitHubAndStripe(t *testing.T) {
	for _, desc := range []struct {
		name     string
		minTools int
	}{
		{"GitHub", 1000},
		{"Stripe", 500},
	} {
		t.Run(desc.name, func(t *testing.T) {
			data, err := os.ReadFile(publishedDescription(t, desc.name))
			require.NoError(t, err)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			cpu0 := cpuTime(t)
			start := time.Now()
			a, err := Load(data, "https://api.example")
			took := time.Since(start)
			cpu := cpuTime(t) - cpu0
			require.NoError(t, err)
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			runtime.KeepAlive(a)
			runtime.KeepAlive(data) // counted before: not freed in between
			t.Logf("%s: %d operations from %.1f MB in %v (%v of CPU), %.0f MB allocated, %.1f MB held by the API",
				desc.name, len(a.Tools()), float64(len(data))/1e6, took.Round(time.Millisecond), cpu.Round(time.Millisecond),
				float64(after.TotalAlloc-before.TotalAlloc)/1e6, float64(held)/1e6)
			assert.Less(t, cpu, 2*time.Minute, "loading is bounded: its CPU time (its wall time depends on the machine's other work), under -race too")
			require.GreaterOrEqual(t, len(a.Tools()), desc.minTools)

			// One compiler for the description's schemas: the meta-schema is
			// compiled once.
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			n := 0
			compileAll := func(raw json.RawMessage) {
				n++
				url := fmt.Sprintf("mem:///%d.json", n)
				doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
				require.NoError(t, err)
				require.NoError(t, c.AddResource(url, doc))
				_, err = c.Compile(url)
				require.NoError(t, err, "%.2000s", raw)
			}
			seen := map[string]bool{}
			longest, outputs, largest := 0, 0, 0
			start = time.Now()
			for _, tl := range a.Tools() {
				assert.True(t, vocab.ValidToolName(tl.Name), "%q", tl.Name)
				assert.LessOrEqual(t, len(tl.Name), MaxToolNameLen, "%q", tl.Name)
				assert.False(t, seen[tl.Name], "%q twice", tl.Name)
				seen[tl.Name] = true
				longest = max(longest, len(tl.Name))
				compileAll(tl.InputSchema)
				largest = max(largest, len(tl.InputSchema))
				if tl.OutputSchema != nil {
					outputs++
					compileAll(tl.OutputSchema)
					largest = max(largest, len(tl.OutputSchema))
				}
			}
			t.Logf("%s: %d unique names (the longest %d bytes), %d input and %d output schemas (the largest %d bytes) compiled as JSON Schema 2020-12 in %v",
				desc.name, len(seen), longest, len(a.Tools()), outputs, largest, time.Since(start).Round(time.Millisecond))
		})
	}
}

// cpuTime is the CPU time the process has used, user and system: a
// load's cost on a machine shared with other work, which its wall time
// is not.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
