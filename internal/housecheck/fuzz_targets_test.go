package housecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// makeFuzzLine is a fuzz run of the Makefile: its target's name and the
// package it is run in.
var makeFuzzLine = regexp.MustCompile(`-fuzz='\^(Fuzz\w+)\$\$'.*\s(\./\S+)`)

// TestMakeFuzzTargetsExist checks that each fuzz run of `make fuzz` names
// a fuzz test of the package it runs in: go test -fuzz with a pattern
// that matches none passes having fuzzed nothing, which is how a fuzz
// target that moved with its package would stop running unnoticed.
func TestMakeFuzzTargetsExist(t *testing.T) {
	root := docsRoot(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	runs := makeFuzzLine.FindAllStringSubmatch(string(mk), -1)
	require.NotEmpty(t, runs, "the Makefile's fuzz runs")
	for _, run := range runs {
		assert.True(t, fuzzTestIn(t, filepath.Join(root, run[2]), run[1]), "make fuzz runs %s in %s, which has no such fuzz test", run[1], run[2])
	}
	assert.False(t, fuzzTestIn(t, filepath.Join(root, "middleware/auth"), "FuzzBearerToken"), "the check finds a target that moved")
}

// fuzzTestIn reports whether a _test.go file of dir declares func name.
func fuzzTestIn(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	require.NoError(t, err)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(src), "\nfunc "+name+"(f *testing.F)") {
			return true
		}
	}
	return false
}
