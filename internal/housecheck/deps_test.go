package housecheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lightPackages are the packages a server that serves stdio, or HTTP with
// metrics, traces and the live page, links (the root package vigil, ".",
// among them), and the smallest instrumented
// stdio server (testdata/stdiosize, whose size docs/performance.md gives):
// they must not pull in what only some deployments choose (Redis, an
// OAuth verifier, an OTLP exporter over gRPC) nor what only tests need (a
// browser driver).
var lightPackages = []string{".", "server", "transport/stdio", "middleware", "debugpage", "internal/housecheck/testdata/stdiosize"}

// heavyModules are the module paths lightPackages must not depend on,
// with the package that brings each in where it is chosen.
var heavyModules = map[string]string{
	"github.com/redis/go-redis":     "redisshare, transport/streamable/redisstore",
	"github.com/golang-jwt":         "middleware/oauth",
	"github.com/MicahParks/keyfunc": "middleware/oauth",
	"github.com/MicahParks/jwkset":  "middleware/oauth",
	"github.com/google/cel-go":      "middleware/policy",
	"google.golang.org/grpc":        "a program that asks for OTLP over gRPC (vigil.WithOTLPGRPC with OpenTelemetry's exporters)",
	"github.com/chromedp":           "tests only",
}

// TestDependenciesFollowUse checks, with go list -deps, that no package of
// lightPackages depends (test files aside) on a module of heavyModules.
func TestDependenciesFollowUse(t *testing.T) {
	args := []string{"-deps", "-json=ImportPath,Deps"}
	for _, p := range lightPackages {
		args = append(args, "./"+p)
	}
	pkgs := goList(t, args...)
	require.Greater(t, len(pkgs), 50, "go list -deps must list the packages and their dependencies")
	assert.Empty(t, heavyProblems(pkgs))
}

// heavyProblems returns, for each package of lightPackages among pkgs,
// the first package of each of heavyModules it depends on.
func heavyProblems(pkgs []listedPackage) []string {
	var problems []string
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, modulePath+"/")
		if p.ImportPath == modulePath {
			rel, ok = ".", true
		}
		if !ok || !slices.Contains(lightPackages, rel) {
			continue
		}
		seen := make(map[string]bool)
		for _, dep := range p.Deps {
			for mod, where := range heavyModules {
				if !seen[mod] && (dep == mod || strings.HasPrefix(dep, mod+"/")) {
					seen[mod] = true
					problems = append(problems, p.ImportPath+" depends on "+dep+": it belongs in "+where)
				}
			}
		}
	}
	return problems
}

// TestHeavyProblemsCatch shows the rule failing on a light package that
// links Redis or gRPC (once per module), and passing other packages and
// modules whose path only starts like a heavy one.
func TestHeavyProblemsCatch(t *testing.T) {
	m := func(rel string) string { return modulePath + "/" + rel }
	got := heavyProblems([]listedPackage{
		{ImportPath: m("server"), Deps: []string{"bytes", "go.opentelemetry.io/otel/trace"}},
		{ImportPath: m("middleware"), Deps: []string{"github.com/redis/go-redis/v9", "github.com/redis/go-redis/v9/internal", "github.com/redis/go-redis-other"}},
		{ImportPath: m("debugpage"), Deps: []string{"google.golang.org/grpc/codes"}},
		{ImportPath: m("redisshare"), Deps: []string{"github.com/redis/go-redis/v9"}},
		{ImportPath: "github.com/redis/go-redis/v9", Deps: []string{"google.golang.org/grpc"}},
	})
	require.Len(t, got, 2, "%q", got)
	assert.Contains(t, got[0], m("middleware")+" depends on github.com/redis/go-redis/v9")
	assert.Contains(t, got[1], m("debugpage")+" depends on google.golang.org/grpc/codes")
}
