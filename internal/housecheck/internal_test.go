package housecheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aboveTheLeaves are the packages of the module, with those under them,
// that no package under internal/ may depend on: every public one.
// internal/ holds leaf helpers that the library's layers share, and a
// helper that needs a public type belongs beside what it serves instead
// (gateway/internal/upstream).
var aboveTheLeaves = []string{"server", "middleware", "transport", "telemetry", "gateway", "redisshare", "debugpage", "cmd"}

// A listedPackage is what go list -json says of a package.
type listedPackage struct {
	ImportPath string
	Deps       []string // every package it imports, directly or not (test files aside)
}

// TestInternalIsLeaves checks, with go list, that no package under
// internal/ depends, in its code (tests aside), on a package of
// aboveTheLeaves.
func TestInternalIsLeaves(t *testing.T) {
	pkgs := goList(t, "-json=ImportPath,Deps", "./internal/...")
	require.Greater(t, len(pkgs), 5, "go list must find the internal packages")
	assert.Empty(t, internalProblems(pkgs))
}

// goList runs go list with args in the repository's root and decodes the
// packages it prints (args must include a -json flag).
func goList(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"list"}, args...)...)
	cmd.Dir = docsRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	return decodeListed(t, out)
}

// decodeListed decodes the stream of JSON objects go list -json prints.
func decodeListed(t *testing.T, out []byte) []listedPackage {
	t.Helper()
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs
		}
		require.NoError(t, err)
		pkgs = append(pkgs, p)
	}
}

// internalProblems returns, for each package of pkgs under the module's
// internal/, the packages of aboveTheLeaves it depends on.
func internalProblems(pkgs []listedPackage) []string {
	var problems []string
	for _, p := range pkgs {
		if !strings.HasPrefix(p.ImportPath, modulePath+"/internal/") {
			continue
		}
		for _, dep := range p.Deps {
			rel, ok := strings.CutPrefix(dep, modulePath+"/")
			if !ok {
				continue
			}
			for _, above := range aboveTheLeaves {
				if rel == above || strings.HasPrefix(rel, above+"/") {
					problems = append(problems, p.ImportPath+" depends on "+dep+": internal/ holds leaf helpers only; move it beside what it serves")
				}
			}
		}
	}
	return problems
}

// TestInternalProblemsCatch shows the rule failing on a helper that
// depends on the server directly or through another package, and passing
// leaves and packages outside internal/.
func TestInternalProblemsCatch(t *testing.T) {
	m := func(rel string) string { return modulePath + "/" + rel }
	got := internalProblems([]listedPackage{
		{ImportPath: m("internal/ok"), Deps: []string{"bytes", m("internal/seal")}},
		{ImportPath: m("internal/vocabulary"), Deps: []string{m("transport/protocol")}},
		{ImportPath: m("gateway/internal/upstream"), Deps: []string{m("transport")}}, // beside its user
		{ImportPath: m("internal/direct"), Deps: []string{m("server")}},
		{ImportPath: m("internal/through"), Deps: []string{m("transport/streamable/redisstore"), m("transport/streamable")}},
		{ImportPath: m("internal/wiring"), Deps: []string{m("redisshare"), m("middleware/auth")}},
		{ImportPath: m("server"), Deps: []string{m("transport/streamable")}},
		{ImportPath: m("internal/serverless"), Deps: []string{m("serverless")}}, // a prefix of a name is not the package
	})
	require.Len(t, got, 6, "%q", got)
	for i, want := range []string{
		"internal/vocabulary depends on " + m("transport/protocol"),
		"internal/direct depends on " + m("server"),
		"internal/through depends on " + m("transport/streamable/redisstore"),
		"internal/through depends on " + m("transport/streamable") + ":",
		"internal/wiring depends on " + m("redisshare"),
		"internal/wiring depends on " + m("middleware/auth"),
	} {
		assert.Contains(t, got[i], want)
	}
}
