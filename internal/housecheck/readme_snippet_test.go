package housecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// goBlock is a fenced Go code block of a markdown page.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// readmeExampleMaxLines are the most lines of the README's first two Go
// blocks: a server with one typed tool, then the same with everything on.
// The tool's input has json and jsonschema tags, as users write it, which
// gofmt lays out on lines of their own, and AddTypedTool's error is
// checked, as users must.
var readmeExampleMaxLines = []int{19, 34}

// TestReadmeQuickStartCompiles builds the README's first two Go blocks,
// each a complete program as a user copies it, as packages of this module
// that import nothing a user's module cannot (testkit.GoInModule): they compile against
// today's API, go vet finds nothing in them, and they stay short.
func TestReadmeQuickStartCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	root := docsRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatch(readme, len(readmeExampleMaxLines))
	if len(blocks) < len(readmeExampleMaxLines) {
		t.Fatalf("README.md has %d Go code blocks, want the quick start's %d", len(blocks), len(readmeExampleMaxLines))
	}
	files := map[string]string{}
	for i, b := range blocks {
		src := string(b[1])
		if !strings.HasPrefix(src, "package main\n") {
			t.Errorf("the README's Go block %d is not a complete program (package main, imports)", i+1)
		}
		if n := strings.Count(src, "\n"); n > readmeExampleMaxLines[i] {
			t.Errorf("the README's Go block %d has %d lines, over %d", i+1, n, readmeExampleMaxLines[i])
		}
		files[filepath.Join("quickstart", string(rune('a'+i)), "main.go")] = src
	}
	out, err := testkit.GoInModule(t, root, files, "vet", "./...")
	if err != nil {
		t.Fatalf("the README's quick start does not build: %v\n%s", err, out)
	}
}
