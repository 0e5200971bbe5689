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

// TestReadmeProgramIsLight lists, with go list -deps, the packages the
// README's first program links: at most readmeMaxPackages outside the
// standard library, and no gRPC (OTLP goes over HTTP unless a program
// asks for gRPC with package telemetry/otlpgrpc), nor anything else of
// heavyModules.
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
	out, err := testkit.GoInModule(t, root, map[string]string{"quickstart/main.go": string(block[1])},
		"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./quickstart")
	if err != nil {
		t.Fatalf("go list -deps of the README's first program: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
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
}
