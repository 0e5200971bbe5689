package housecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// snippetImports are the packages the README's quick start uses. A
// snippet that needs another one fails to compile: add it here.
var snippetImports = []string{
	"context", "log/slog", "net/http", "time",
	"github.com/prometheus/client_golang/prometheus",
	"github.com/prometheus/client_golang/prometheus/promhttp",
	"go.opentelemetry.io/otel/sdk/trace",
	"github.com/vigil-mcp/vigil/debugpage",
	"github.com/vigil-mcp/vigil/middleware",
	"github.com/vigil-mcp/vigil/server",
	"github.com/vigil-mcp/vigil/telemetry",
	"github.com/vigil-mcp/vigil/transport/streamable",
}

// goBlock is a fenced Go code block of a markdown page.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestReadmeQuickStartCompiles builds the README's first Go block, with
// the imports above, as a package of this module that imports nothing a
// user's module cannot (testkit.GoInModule): the quick start a user copies compiles
// against today's API, and go vet finds nothing in it.
func TestReadmeQuickStartCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	root := docsRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := goBlock.FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no Go code block: the quick start is gone")
	}
	var src strings.Builder
	src.WriteString("package quickstart\n\nimport (\n")
	for _, imp := range snippetImports {
		src.WriteString("\t" + aliasOf(imp) + " \"" + imp + "\"\n")
	}
	src.WriteString(")\n\n")
	// One exported name of each package keeps every import used, whatever
	// the snippet uses.
	for _, imp := range snippetImports {
		src.WriteString("var _ = " + aliasOf(imp) + "." + anyExported[imp] + "\n")
	}
	src.Write(m[1])

	out, err := testkit.GoInModule(t, root, map[string]string{"quickstart/quickstart.go": src.String()}, "vet", "./...")
	if err != nil {
		t.Fatalf("the README's quick start does not build: %v\n%s\n--- the program:\n%s", err, out, src.String())
	}
}

// anyExported names one exported identifier of each imported package, so
// that an import the snippet stops using does not fail the build.
var anyExported = map[string]string{
	"context":  "Background",
	"log/slog": "Default",
	"net/http": "NewServeMux",
	"time":     "Second",
	"github.com/prometheus/client_golang/prometheus":          "NewRegistry",
	"github.com/prometheus/client_golang/prometheus/promhttp": "HandlerFor",
	"go.opentelemetry.io/otel/sdk/trace":                      "NewTracerProvider",
	"github.com/vigil-mcp/vigil/debugpage":                    "NewRecorder",
	"github.com/vigil-mcp/vigil/middleware":                   "NewInstrumentation",
	"github.com/vigil-mcp/vigil/server":                       "New",
	"github.com/vigil-mcp/vigil/telemetry":                    "TransportStreamableHTTP",
	"github.com/vigil-mcp/vigil/transport/streamable":         "New",
}

// aliasOf is the name the snippet uses for the package imp.
func aliasOf(imp string) string {
	if imp == "go.opentelemetry.io/otel/sdk/trace" {
		return "sdktrace"
	}
	return filepath.Base(imp)
}
