package housecheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVigilIsTheTop checks, with go list, that the root package vigil sits
// at the top of the import graph, cmd → vigil → middleware → server →
// transport: no package of the module depends on it (test files aside)
// but the commands.
func TestVigilIsTheTop(t *testing.T) {
	pkgs := goList(t, "-json=ImportPath,Deps", "./...")
	require.True(t, slices.ContainsFunc(pkgs, func(p listedPackage) bool { return p.ImportPath == modulePath }), "go list must find the root package")
	assert.Empty(t, topProblems(pkgs))
}

// topProblems returns the packages of pkgs, other than the commands (under
// cmd/), that depend on the root package.
func topProblems(pkgs []listedPackage) []string {
	var problems []string
	for _, p := range pkgs {
		if p.ImportPath == modulePath || strings.HasPrefix(p.ImportPath, modulePath+"/cmd/") {
			continue
		}
		if slices.Contains(p.Deps, modulePath) {
			problems = append(problems, p.ImportPath+" depends on "+modulePath+": the root package is the top of the import graph, which only commands import")
		}
	}
	return problems
}

// TestTopProblemsCatch shows the rule failing on a library package that
// depends on the root package, and passing the commands.
func TestTopProblemsCatch(t *testing.T) {
	m := func(rel string) string { return modulePath + "/" + rel }
	got := topProblems([]listedPackage{
		{ImportPath: modulePath, Deps: []string{m("middleware"), m("server")}},
		{ImportPath: m("cmd/vigil"), Deps: []string{modulePath, m("server")}},
		{ImportPath: m("middleware"), Deps: []string{m("server"), modulePath}},
		{ImportPath: m("server"), Deps: []string{m("transport")}},
	})
	assert.Equal(t, []string{m("middleware") + " depends on " + modulePath + ": the root package is the top of the import graph, which only commands import"}, got)
}
