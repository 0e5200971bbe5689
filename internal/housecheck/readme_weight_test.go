package housecheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// readmeMaxPackages is the most non-standard packages (the program's own
// included) the README's first program may link.
const readmeMaxPackages = 200

// readmeMaxBinaryBytes is the most the README's first program may weigh,
// built by a plain go build (symbols and DWARF kept).
const readmeMaxBinaryBytes = 21_000_000

// TestReadmeProgramIsLight lists, with go list -deps, the packages the
// README's first program links: at most readmeMaxPackages outside the
// standard library, and no gRPC (OTLP goes over HTTP unless a program
// asks for gRPC with vigil.WithOTLPGRPC), nor anything else of
// heavyModules; and no text/template, whose execution calls
// reflect.Value.MethodByName with names known at run time and so makes the
// linker keep every exported method of every linked type (4.4 MB of the
// program when the live page used html/template). Built with go build, it
// weighs at most readmeMaxBinaryBytes.
func TestReadmeProgramIsLight(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list -deps")
	}
	root := docsRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := goBlock.FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no Go code block")
	}
	files := map[string]string{"quickstart/main.go": string(block[1])}
	out, err := testkit.GoInModule(t, root, files,
		"list", "-deps", "-f", "{{if .Standard}}std:{{end}}{{.ImportPath}}", "./quickstart")
	if err != nil {
		t.Fatalf("go list -deps of the README's first program: %v\n%s", err, out)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if std, ok := strings.CutPrefix(p, "std:"); ok {
			if std == "text/template" {
				t.Errorf("the README's first program links text/template (html/template): every exported method of every linked type is kept")
			}
			continue
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) > readmeMaxPackages {
		t.Errorf("the README's first program links %d non-standard packages, over %d", len(pkgs), readmeMaxPackages)
	}
	seen := make(map[string]bool)
	for _, p := range pkgs {
		for mod, where := range heavyModules {
			if !seen[mod] && (p == mod || strings.HasPrefix(p, mod+"/")) {
				seen[mod] = true
				t.Errorf("the README's first program links %s: it belongs in %s", p, where)
			}
		}
	}
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := testkit.GoInModule(t, root, files, "build", "-o", bin, "./quickstart"); err != nil {
		t.Fatalf("go build of the README's first program: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > readmeMaxBinaryBytes {
		t.Errorf("the README's first program weighs %d bytes, over %d", fi.Size(), readmeMaxBinaryBytes)
	}
	t.Logf("the README's first program: %d non-standard packages, %d bytes", len(pkgs), fi.Size())
}
