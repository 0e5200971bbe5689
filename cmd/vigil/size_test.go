package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bounds of issue 69 on the command: its own wiring only, what is not
// living in cmd/internal.
const (
	maxCommandLines = 2000 // non-test Go lines of cmd/vigil
	maxFuncLines    = 80   // lines of one function, func to closing brace
)

// TestCommandStaysSmall: cmd/vigil's non-test Go files are at most
// maxCommandLines lines, and none of their functions is over maxFuncLines.
func TestCommandStaysSmall(t *testing.T) {
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	total, files := 0, 0
	var long []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		files++
		total += bytes.Count(src, []byte("\n"))
		over, err := funcsOver(name, src, maxFuncLines)
		require.NoError(t, err)
		long = append(long, over...)
	}
	require.Greater(t, files, 5, "the command's files are found")
	assert.LessOrEqual(t, total, maxCommandLines, "non-test lines of cmd/vigil: move what is not the command's own wiring to cmd/internal")
	assert.Empty(t, long, "functions over %d lines", maxFuncLines)
}

// funcsOver returns the functions of the Go file src (named name) that are
// over limit lines, as name: function (lines).
func funcsOver(name string, src []byte, limit int) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var over []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > limit {
			over = append(over, fmt.Sprintf("%s: %s (%d lines)", name, fd.Name.Name, n))
		}
	}
	return over, nil
}

// TestFuncsOverCatches: a function one line over the limit is named, one
// at it is not, and a method counts as a function.
func TestFuncsOverCatches(t *testing.T) {
	body := func(name string, lines int) string {
		return "func " + name + "() {\n" + strings.Repeat("\t_ = 1\n", lines-2) + "}\n"
	}
	src := "package p\n\ntype T struct{}\n\n" + body("atLimit", 5) + body("over", 6) +
		"func (T) method() {\n" + strings.Repeat("\t_ = 1\n", 4) + "}\n"
	over, err := funcsOver("p.go", []byte(src), 5)
	require.NoError(t, err)
	assert.Equal(t, []string{"p.go: over (6 lines)", "p.go: method (6 lines)"}, over)
}
