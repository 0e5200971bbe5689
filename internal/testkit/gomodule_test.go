package testkit

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestInternalImportsAreTheModulesOwn finds the imports of the module's
// internal packages, at the top or deeper, and only those: a user's
// module cannot import them, so GoInModule refuses them.
func TestInternalImportsAreTheModulesOwn(t *testing.T) {
	files := map[string]string{
		"a/a.go": `package a

import (
	"example.com/m/internal/x"
	"example.com/m/server/internal/y"
	"example.com/m/server"
	"example.com/other/internal/z"
	"example.com/m/internalish"
)
`,
		"b/b.go":      "package b\n\nimport _ \"example.com/m/internal/x\"\n",
		"b/README":    "import \"example.com/m/internal/w\"\n",
		"c/broken.go": "package c\n\nimport (\n",
	}
	got := internalImports("example.com/m", files)
	want := []string{"example.com/m/internal/x", "example.com/m/server/internal/y"}
	if !slices.Equal(got, want) {
		t.Errorf("internalImports = %q, want %q", got, want)
	}
}

// TestModulePathReadsTheDirective reads the module path of this module and
// of a go.mod that quotes it.
func TestModulePathReadsTheDirective(t *testing.T) {
	got, err := modulePath(filepath.Join("..", "..", "go.mod"))
	if err != nil || got != "github.com/vigil-mcp/vigil" {
		t.Errorf("modulePath(this module) = %q, %v", got, err)
	}
	quoted := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(quoted, []byte("// a comment\nmodule \"example.com/q\"\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := modulePath(quoted); err != nil || got != "example.com/q" {
		t.Errorf("modulePath(quoted) = %q, %v", got, err)
	}
	if _, err := modulePath(filepath.Join(t.TempDir(), "go.mod")); err == nil {
		t.Error("modulePath of a missing file: no error")
	}
}
