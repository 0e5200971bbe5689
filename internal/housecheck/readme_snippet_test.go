package housecheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
	"github.com/vigil-mcp/vigil/telemetry/otelsetup",
	"github.com/vigil-mcp/vigil/transport/streamable",
}

// goBlock is a fenced Go code block of a markdown page.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestReadmeQuickStartCompiles builds the README's first Go block, with
// the imports above, in a module of its own that requires this one
// through a replace directive: the quick start a user copies compiles
// against today's API, and go vet finds nothing in it.
func TestReadmeQuickStartCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
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
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
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

	dir := t.TempDir()
	files := map[string]string{
		"go.mod":                   "module example.com/quickstart\n\ngo 1.26.0\n\nrequire github.com/vigil-mcp/vigil v0.0.0\n\nreplace github.com/vigil-mcp/vigil => " + root + "\n",
		"go.sum":                   string(sum),
		"quickstart/quickstart.go": src.String(),
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), goCmd, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
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
	"github.com/vigil-mcp/vigil/telemetry/otelsetup":          "TracerProvider",
	"github.com/vigil-mcp/vigil/transport/streamable":         "New",
}

// aliasOf is the name the snippet uses for the package imp.
func aliasOf(imp string) string {
	if imp == "go.opentelemetry.io/otel/sdk/trace" {
		return "sdktrace"
	}
	return filepath.Base(imp)
}
