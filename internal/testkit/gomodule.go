package testkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// GoInModule writes files (path: content) as packages of the module found
// at root, in a temporary directory under internal/testkit/testdata, runs
// the go command with args there (so ./... names those packages) and
// returns its combined output and error.
//
// Being packages of the module, the files build with its go.mod and
// go.sum, and need no module that the module's own build does not: on a
// fresh machine the go command fetches what is missing as `go test` does,
// through the user's GOPROXY, and needs nothing when the modules are
// already there. The files may import what a user's module can import,
// and none of the module's internal packages: GoInModule fails t when
// they do. It skips t when there is no go command or the module cannot be
// written (a read-only copy, as in the module cache).
func GoInModule(t testing.TB, root string, files map[string]string, args ...string) ([]byte, error) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	modPath, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if bad := internalImports(modPath, files); len(bad) > 0 {
		t.Fatalf("the files import packages a user's module cannot: %s", strings.Join(bad, ", "))
	}
	// A testdata directory: go's ./... patterns, golangci-lint and the
	// house checks pass over it while a test is using it.
	parent := filepath.Join(root, "internal", "testkit", "testdata")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			t.Skip("the module cannot be written:", err)
		}
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(parent, "goinmodule") //nolint:usetesting // t.TempDir is outside the module
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	return cmd.CombinedOutput()
}

// modulePath is the module path that the go.mod file at path declares.
func modulePath(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	lines := bufio.NewScanner(bytes.NewReader(data))
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(lines.Text()), "module "); ok {
			rest = strings.TrimSpace(rest)
			if unquoted, err := strconv.Unquote(rest); err == nil {
				rest = unquoted
			}
			return rest, nil
		}
	}
	return "", fmt.Errorf("%s: no module directive", path)
}

// internalImports lists, sorted, the imports of the Go files among files
// that name an internal package of the module modPath (one with an
// internal element in its path), which only the module itself may import.
// A file that does not parse imports nothing here: the go command reports
// it.
func internalImports(modPath string, files map[string]string) []string {
	var bad []string
	for name, content := range files {
		if filepath.Ext(name) != ".go" {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, content, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				continue
			}
			rest, ok := strings.CutPrefix(path, modPath+"/")
			if ok && slices.Contains(strings.Split(rest, "/"), "internal") && !slices.Contains(bad, path) {
				bad = append(bad, path)
			}
		}
	}
	slices.Sort(bad)
	return bad
}
