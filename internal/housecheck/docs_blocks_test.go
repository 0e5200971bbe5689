package housecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// The analyzers the docs' Go blocks must pass besides go vet, run with
// `go run` at these versions (fetched through the Go module proxy once,
// then from the module cache): staticcheck for the errors left unchecked
// (an err assigned and never read, SA4006; a Close deferred before its
// error is checked, SA5001) and errcheck for the errors dropped (a call
// whose error result is ignored).
const (
	staticcheckPkg = "honnef.co/go/tools/cmd/staticcheck@v0.8.2"
	errcheckPkg    = "github.com/kisielk/errcheck@v1.10.0"
)

// docPages are the pages whose fenced blocks TestDocsBlocks checks,
// relative to the module root.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	for i, p := range pages {
		pages[i], _ = filepath.Rel(root, p)
	}
	return pages
}

// fence is one fenced block of a markdown page.
type fence struct {
	page   string // relative to the module root
	line   int    // the opening fence's
	lang   string // the info string's first word
	marker string // the HTML comment on the line before, without <!-- and -->
	body   string
}

func (f fence) String() string { return fmt.Sprintf("%s:%d", f.page, f.line) }

// markerComment is an HTML comment alone on a line.
var markerComment = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)

// fences returns the fenced blocks of a page's text.
func fences(page, text string) []fence {
	var out []fence
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		f := fence{page: page, line: i + 1, lang: strings.Fields(info + " x")[0]}
		if i > 0 {
			if m := markerComment.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				f.marker = m[1]
			}
		}
		var body strings.Builder
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body.WriteString(lines[i] + "\n")
		}
		f.body = body.String()
		out = append(out, f)
	}
	return out
}

// docImports are the packages a Go block that is not a whole program may
// use without naming its imports, by the name it uses: each block gets
// those it refers to.
var docImports = map[string]string{
	"context":    "context",
	"embed":      "embed",
	"errors":     "errors",
	"fmt":        "fmt",
	"fs":         "io/fs",
	"http":       "net/http",
	"json":       "encoding/json",
	"os":         "os",
	"slog":       "log/slog",
	"time":       "time",
	"trace":      "go.opentelemetry.io/otel/trace",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"promhttp":   "github.com/prometheus/client_golang/prometheus/promhttp",
	"sdktrace":   "go.opentelemetry.io/otel/sdk/trace",
	"vigil":      "github.com/vigil-mcp/vigil",
	"debugpage":  "github.com/vigil-mcp/vigil/debugpage",
	"gateway":    "github.com/vigil-mcp/vigil/gateway",
	"middleware": "github.com/vigil-mcp/vigil/middleware",
	"auth":       "github.com/vigil-mcp/vigil/middleware/auth",
	"oauth":      "github.com/vigil-mcp/vigil/middleware/oauth",
	"policy":     "github.com/vigil-mcp/vigil/middleware/policy",
	"redisshare": "github.com/vigil-mcp/vigil/redisshare",
	"server":     "github.com/vigil-mcp/vigil/server",
	"mcptest":    "github.com/vigil-mcp/vigil/server/mcptest",
	"telemetry":  "github.com/vigil-mcp/vigil/telemetry",
	"transport":  "github.com/vigil-mcp/vigil/transport",
	"protocol":   "github.com/vigil-mcp/vigil/transport/protocol",
	"stdio":      "github.com/vigil-mcp/vigil/transport/stdio",
	"streamable": "github.com/vigil-mcp/vigil/transport/streamable",
}

// fragmentMarker marks a Go block of statements: the marker gives the
// signature of the function they are the body of, which names what the
// page's text gives them (`<!-- fragment: func(srv *server.Server) error -->`).
const fragmentMarker = "fragment:"

// goEmbed is a //go:embed directive, for the pattern it names.
var goEmbed = regexp.MustCompile(`(?m)^//go:embed (\S+)$`)

// goFiles turns the Go blocks of the pages into the files of one package
// each, under the directory named by the block's page and line: a whole
// program as it is; a block of declarations in a package of its own, with
// the imports it uses (docImports); a fragment (fragmentMarker), its
// leading declarations so, its statements in a function of the marker's
// signature. A file a //go:embed names is created, empty (a name with a
// dot) or a directory holding one file.
func goFiles(t *testing.T, blocks []fence) (files map[string]string, dirs map[string]fence) {
	t.Helper()
	files, dirs = map[string]string{}, map[string]fence{}
	for _, b := range blocks {
		if b.lang != "go" {
			continue
		}
		pkg := strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(strings.ToLower(b.page)) + fmt.Sprintf("_%d", b.line)
		dirs[pkg] = b
		src := b.body
		if !strings.HasPrefix(src, "package ") {
			decls, body := src, ""
			if sig, ok := strings.CutPrefix(b.marker, fragmentMarker); ok {
				decls, body = splitDecls(src)
				sig = strings.TrimSpace(sig)
				body = "func _" + strings.TrimPrefix(sig, "func") + " {\n" + body
				if n := resultCount(t, b, sig); n > 0 && !strings.HasPrefix(strings.TrimSpace(lastLine(body)), "return") {
					body += "\treturn " + strings.TrimSuffix(strings.Repeat("nil, ", n), ", ") + "\n"
				}
				body += "}\n"
			}
			code := decls + "\n" + body
			src = "package " + pkg + "\n\n" + importsFor(code) + code
		}
		files[filepath.Join(pkg, "doc.go")] = src
		for _, m := range goEmbed.FindAllStringSubmatch(src, -1) {
			if strings.Contains(m[1], ".") {
				files[filepath.Join(pkg, m[1])] = ""
			} else {
				files[filepath.Join(pkg, m[1], "README")] = ""
			}
		}
	}
	return files, dirs
}

// splitDecls splits a fragment into its leading paragraphs that are
// declarations (//go:embed variables, types), which must be at the file's
// level, and the statements after them.
func splitDecls(src string) (decls, stmts string) {
	paras := strings.SplitAfter(src, "\n\n")
	n := 0
	for ; n < len(paras); n++ {
		if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+paras[n], 0); err != nil {
			break
		}
	}
	return strings.Join(paras[:n], ""), strings.Join(paras[n:], "")
}

// lastLine is the last line of s that is not blank.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// resultCount is how many results the function signature sig has.
func resultCount(t *testing.T, b fence, sig string) int {
	t.Helper()
	e, err := parser.ParseExpr(sig + " {}")
	if err != nil {
		t.Fatalf("%s: the fragment's signature %q: %v", b, sig, err)
	}
	lit, ok := e.(*ast.FuncLit)
	if !ok {
		t.Fatalf("%s: the fragment's signature %q is no func signature", b, sig)
	}
	return lit.Type.Results.NumFields()
}

// importsFor is the import declaration of the docImports code uses: the
// names it qualifies identifiers with, outside comments and strings.
func importsFor(code string) string {
	var sc scanner.Scanner
	fset := token.NewFileSet()
	sc.Init(fset.AddFile("", -1, len(code)), []byte(code), nil, 0)
	used := map[string]bool{}
	prev, prevLit := token.ILLEGAL, ""
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.PERIOD && prev == token.IDENT && docImports[prevLit] != "" {
			used[prevLit] = true
		}
		if tok == token.IDENT && prev == token.PERIOD {
			lit = "" // a selector's name, never a package
		}
		prev, prevLit = tok, lit
	}
	if len(used) == 0 && !goEmbed.MatchString(code) {
		return ""
	}
	names := slices.Sorted(maps.Keys(used))
	var b strings.Builder
	b.WriteString("import (\n")
	for _, name := range names {
		fmt.Fprintf(&b, "\t%s %q\n", name, docImports[name])
	}
	if goEmbed.MatchString(code) && !used["embed"] {
		b.WriteString("\t_ \"embed\"\n")
	}
	b.WriteString(")\n\n")
	return b.String()
}

// checkGo compiles the files goFiles made, in a package of this module
// each, and runs go vet, staticcheck and errcheck on them; it returns
// what failed, with the output.
func checkGo(t *testing.T, root string, files map[string]string) []string {
	t.Helper()
	var failed []string
	for _, args := range [][]string{
		{"vet", "./..."},
		// U1000 (unused): a page's declarations are there to be read.
		{"run", staticcheckPkg, "-checks", "inherit,-U1000", "./..."},
		{"run", errcheckPkg, "./..."},
	} {
		out, err := testkit.GoInModule(t, root, files, args...)
		if err != nil {
			failed = append(failed, fmt.Sprintf("go %s: %v\n%s", strings.Join(args, " "), err, out))
		}
	}
	return failed
}

// TestDocsBlocks checks every fenced block of README.md and docs/*.md
// that is code. Each Go block compiles against today's API and passes go
// vet, staticcheck and errcheck (goFiles says how a block that is not a
// whole program is completed). Each shell block is run by a test, named
// by its marker (`<!-- run by TestName -->`), or says why it cannot run
// here (`<!-- not run: why -->`).
func TestDocsBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet, staticcheck and errcheck")
	}
	root := docsRoot(t)
	var blocks []fence
	for _, page := range docPages(t, root) {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, fences(page, string(text))...)
	}
	tests := testNames(t, root)
	nGo, nRun, nNotRun := 0, 0, 0
	for _, b := range blocks {
		switch b.lang {
		case "go":
			nGo++
		case "sh", "bash", "console", "shell":
			switch name, ok := strings.CutPrefix(b.marker, "run by "); {
			case ok:
				if !tests[name] {
					t.Errorf("%s: the shell block is run by %s, which is no test of this module", b, name)
				}
				nRun++
			case strings.HasPrefix(b.marker, "not run: ") && len(b.marker) > len("not run: "):
				nNotRun++
			default:
				t.Errorf("%s: a shell block is marked <!-- run by TestName --> or <!-- not run: why -->; it has %q", b, b.marker)
			}
		}
	}
	files, _ := goFiles(t, blocks)
	for _, f := range checkGo(t, root, files) {
		t.Error(f)
	}
	if t.Failed() {
		var names []string
		for name := range files {
			if strings.HasSuffix(name, ".go") {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			t.Logf("--- %s:\n%s", name, files[name])
		}
	}
	t.Logf("%d Go blocks compiled and checked; %d shell blocks run by tests, %d marked not runnable here", nGo, nRun, nNotRun)
}

// TestDocsBlocksCatch shows TestDocsBlocks failing a block for each
// thing it checks: one that does not compile, one whose err is never
// read, one that leaves an err unchecked, one that defers a Close before checking the error, and one
// that drops an error; and a fragment passing.
func TestDocsBlocksCatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet, staticcheck and errcheck")
	}
	root := docsRoot(t)
	const sig = "<!-- fragment: func(srv *server.Server, h server.ToolHandler) error -->\n"
	for name, tc := range map[string]struct {
		page string
		want string // in the output; "" for a page that passes
	}{
		"passes":               {sig + "```go\nif err := srv.AddTool(server.Tool{Name: \"t\"}, h); err != nil {\n\treturn err\n}\n```\n", ""},
		"does not compile":     {sig + "```go\nsrv.AddToool(server.Tool{Name: \"t\"}, h)\n```\n", "AddToool"},
		"err never read":       {sig + "```go\nerr := srv.AddTool(server.Tool{Name: \"t\"}, h)\n```\n", "declared and not used: err"},
		"err unchecked":        {sig + "```go\nerr := srv.AddTool(server.Tool{Name: \"a\"}, h)\nif err != nil {\n\treturn err\n}\nerr = srv.AddTool(server.Tool{Name: \"b\"}, h)\n```\n", "SA4006"},
		"close deferred first": {"<!-- fragment: func() error -->\n```go\nf, err := os.Open(\"x\")\ndefer f.Close()\nreturn err\n```\n", "SA5001"},
		"error dropped":        {sig + "```go\nsrv.AddTool(server.Tool{Name: \"t\"}, h)\n```\n", "srv.AddTool"},
	} {
		t.Run(name, func(t *testing.T) {
			files, _ := goFiles(t, fences("page.md", tc.page))
			failed := strings.Join(checkGo(t, root, files), "\n")
			switch {
			case tc.want == "" && failed != "":
				t.Errorf("the block fails:\n%s", failed)
			case tc.want != "" && !strings.Contains(failed, tc.want):
				t.Errorf("the block is not failed with %q:\n%s\n--- files: %v", tc.want, failed, files)
			}
		})
	}
}

// testFunc is a top-level test function's declaration.
var testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)

// testNames is the set of the module's test functions.
func testNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(src, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
