package protocol_test

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestVocabularyIsWrittenOnce scans every non-test Go file of the module and
// fails when a JSON-RPC code (an integer literal), a protocol version or a
// reject reason label (string literals) is written in more than one file:
// each must be named through this package instead.
func TestVocabularyIsWrittenOnce(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	codes := map[string]bool{}
	for _, c := range protocol.Codes() {
		codes[strconv.FormatInt(-int64(c), 10)] = true // the literal after the minus sign
	}
	strs := map[string]bool{}
	for _, v := range protocol.Versions() {
		strs[strconv.Quote(v)] = true
	}
	for _, r := range protocol.RejectReasons() {
		// "other" is every label set's catch-all, and "forbidden" is also
		// the MCP value of a tool's taskSupport.
		if r != protocol.RejectOther && r != protocol.RejectForbidden {
			strs[strconv.Quote(r.String())] = true
		}
	}
	where := map[string][]string{} // literal -> files
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || isModule(path)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, path)
		for lit := range literals(t, path) {
			if codes[lit] || strs[lit] {
				where[lit] = append(where[lit], rel)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 50, "the scan must reach the module's files")
	for lit, in := range where {
		assert.Len(t, in, 1, "%s is written in %v: name it through package protocol", lit, in)
	}
	for lit := range codes {
		assert.Contains(t, where, lit, "the scan must find the definition of -%s", lit)
	}
}

// literals returns the set of integer and string literals of a Go file.
func literals(t *testing.T, path string) map[string]bool {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(path, -1, len(src)), src, nil, 0)
	out := map[string]bool{}
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.INT || tok == token.STRING {
			out[lit] = true
		}
	}
}

// moduleRoot finds the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for !isModule(dir) {
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test")
		dir = parent
	}
	return dir
}

func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}
