package housecheck

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// updateAPI rewrites the listings of api/ instead of comparing them; so
// does VIGIL_API_UPDATE=1, which `go test ./...` passes on to this
// package alone.
var updateAPI = flag.Bool("update", false, "rewrite api/*.txt from the packages' exported API")

// apiDir is where the listings are, under the repository's root.
const apiDir = "api"

// apiUpdateHint says how to regenerate the listings.
const apiUpdateHint = "make api (VIGIL_API_UPDATE=1 go test -count=1 -run '^TestAPI$' ./internal/housecheck)"

// TestAPI lists the exported API of every package users may import (all
// of the module's but commands, internal/ and testdata) and compares each
// listing with its checked-in copy, api/<path with dots>.txt: one line per
// exported declaration, struct field, interface method and method, in
// order of name, as the source writes them (a constant with its value, a
// variable declared without a type by its name). A difference fails and
// names each line added or gone: a new, changed or removed exported name
// is a decision for the review, not a side effect. Once decided,
// regenerate every listing with one command and commit api/ with the
// change:
//
//	make api
//
// which runs VIGIL_API_UPDATE=1 go test -count=1 -run '^TestAPI$'
// ./internal/housecheck (or pass -update to go test in this package).
func TestAPI(t *testing.T) {
	root := docsRoot(t)
	pkgs := publicPackages(t, root)
	require.Contains(t, pkgs, "transport/streamable", "the walk must reach the packages")
	want := make(map[string]string, len(pkgs)) // file name -> listing
	for _, rel := range pkgs {
		want[apiFileName(rel)] = apiListing(t, root, rel)
	}
	dir := filepath.Join(root, apiDir)
	if *updateAPI || os.Getenv("VIGIL_API_UPDATE") == "1" {
		writeListings(t, dir, want)
		return
	}
	have := readListings(t, dir)
	for _, name := range sortedKeys(want) {
		if d := listingDiff(have[name], want[name]); d != "" {
			t.Errorf("%s/%s is not the package's exported API:\n%s\n%s", apiDir, name, d, apiAdvice)
		}
	}
	for _, name := range sortedKeys(have) {
		if _, ok := want[name]; !ok {
			t.Errorf("%s/%s lists a package that is gone or no longer public: remove it with %s", apiDir, name, apiUpdateHint)
		}
	}
}

// apiAdvice ends the message of a listing that differs.
const apiAdvice = "(+ exported now, not listed; - listed, no longer exported as listed.)\n" +
	"A new, changed or removed exported name is a decision: make it in review, not by accident. " +
	"Then regenerate the listings with " + apiUpdateHint + " and commit api/."

// publicPackages returns the module-relative paths of the packages users
// may import: every directory with Go code that is not a command, not
// under internal/ or testdata/, and not in a module of its own
// (deploy/validate), sorted.
func publicPackages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if rel != "." && (name == "internal" || name == "testdata" || name == "node_modules" ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && rel != "." {
			return filepath.SkipDir // another module
		}
		bp, err := apiBuildContext().ImportDir(p, 0)
		if _, none := errors.AsType[*build.NoGoError](err); none {
			return nil
		}
		if err != nil {
			return err
		}
		if bp.Name != "main" {
			out = append(out, rel)
		}
		return nil
	})
	require.NoError(t, err)
	slices.Sort(out)
	return out
}

// apiBuildContext is the platform whose files make a package's listing,
// the same wherever the test runs.
func apiBuildContext() *build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled = "linux", "amd64", false
	return &c
}

// apiFileName is the listing's file for the package at rel: its path with
// dots for slashes, and vigil.txt for the root package.
func apiFileName(rel string) string {
	if rel == "." {
		return path.Base(modulePath) + ".txt"
	}
	return strings.ReplaceAll(rel, "/", ".") + ".txt"
}

// apiListing returns the listing of the package at rel under root: its
// import path, then its exported API, one declaration a line.
func apiListing(t *testing.T, root, rel string) string {
	t.Helper()
	bp, err := apiBuildContext().ImportDir(filepath.Join(root, filepath.FromSlash(rel)), 0)
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		files = append(files, f)
	}
	lines := exportedAPI(fset, files)
	return "package " + path.Join(modulePath, rel) + "\n\n" + strings.Join(lines, "\n") + "\n"
}

// modulePath is the module's import path.
const modulePath = "github.com/vigil-mcp/vigil"

// An apiLine is one line of a listing and where it sorts: by the name it
// belongs to (a method's and a field's to their type's), the type's own
// line first, then its fields, then its methods.
type apiLine struct {
	owner string
	rank  int
	text  string
}

// Ranks of the lines of a name.
const (
	rankDecl = iota
	rankMember
	rankMethod
)

// exportedAPI returns the lines of the exported API of a package's files.
func exportedAPI(fset *token.FileSet, files []*ast.File) []string {
	var lines []apiLine
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				lines = append(lines, funcLines(fset, d)...)
			case *ast.GenDecl:
				lines = append(lines, genDeclLines(fset, d)...)
			}
		}
	}
	slices.SortFunc(lines, func(a, b apiLine) int {
		if c := strings.Compare(a.owner, b.owner); c != 0 {
			return c
		}
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.text, b.text)
	})
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, l.text)
	}
	return slices.Compact(out)
}

// funcLines lists an exported function, or an exported method of an
// exported type.
func funcLines(fset *token.FileSet, d *ast.FuncDecl) []apiLine {
	if !d.Name.IsExported() {
		return nil
	}
	sig := strings.TrimPrefix(nodeString(fset, d.Type), "func")
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return []apiLine{{d.Name.Name, rankDecl, "func " + d.Name.Name + sig}}
	}
	recv := d.Recv.List[0].Type
	star := ""
	if s, ok := recv.(*ast.StarExpr); ok {
		star, recv = "*", s.X
	}
	typ := baseTypeName(recv)
	if !ast.IsExported(typ) {
		return nil
	}
	return []apiLine{{typ, rankMethod, "func (" + star + nodeString(fset, recv) + ") " + d.Name.Name + sig}}
}

// baseTypeName returns the name of a receiver's type, without its type
// parameters.
func baseTypeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return baseTypeName(x.X)
	case *ast.IndexListExpr:
		return baseTypeName(x.X)
	}
	return ""
}

// embeddedName returns the name of an embedded field's type.
func embeddedName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return embeddedName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.IndexExpr:
		return embeddedName(x.X)
	case *ast.IndexListExpr:
		return embeddedName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// typeParams prints a type's parameters, [K comparable, V any], or
// nothing.
func typeParams(fset *token.FileSet, l *ast.FieldList) string {
	if l == nil || len(l.List) == 0 {
		return ""
	}
	var params []string
	for _, f := range l.List {
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		params = append(params, strings.Join(names, ", ")+" "+nodeString(fset, f.Type))
	}
	return "[" + strings.Join(params, ", ") + "]"
}

// genDeclLines lists the exported types, constants and variables of a
// declaration, with the exported fields and methods of its types.
func genDeclLines(fset *token.FileSet, d *ast.GenDecl) []apiLine {
	var lines []apiLine
	var lastType string // the type of an iota group's implicit repetitions
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.TypeSpec:
			lines = append(lines, typeLines(fset, s)...)
		case *ast.ValueSpec:
			typ := ""
			switch {
			case s.Type != nil:
				typ = " " + nodeString(fset, s.Type)
				lastType = typ
			case d.Tok == token.CONST && len(s.Values) == 0:
				typ = lastType
			default:
				lastType = ""
			}
			for i, name := range s.Names {
				if !name.IsExported() {
					continue
				}
				text := d.Tok.String() + " " + name.Name + typ
				if d.Tok == token.CONST && i < len(s.Values) {
					text += " = " + nodeString(fset, s.Values[i])
				}
				lines = append(lines, apiLine{name.Name, rankDecl, text})
			}
		}
	}
	return lines
}

// typeLines lists an exported type: its declaration, and the exported
// fields of a struct or the methods and embedded types of an interface.
func typeLines(fset *token.FileSet, s *ast.TypeSpec) []apiLine {
	name := s.Name.Name
	if !ast.IsExported(name) {
		return nil
	}
	head := "type " + name + typeParams(fset, s.TypeParams)
	if s.Assign.IsValid() {
		return []apiLine{{name, rankDecl, head + " = " + nodeString(fset, s.Type)}}
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		lines := []apiLine{{name, rankDecl, head + " struct"}}
		for _, f := range t.Fields.List {
			typ := nodeString(fset, f.Type)
			if len(f.Names) == 0 { // embedded
				if ast.IsExported(embeddedName(f.Type)) {
					lines = append(lines, apiLine{name, rankMember, "embed " + name + "." + typ})
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					lines = append(lines, apiLine{name, rankMember, "field " + name + "." + n.Name + " " + typ})
				}
			}
		}
		return lines
	case *ast.InterfaceType:
		lines := []apiLine{{name, rankDecl, head + " interface"}}
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 { // an embedded interface or a type set
				lines = append(lines, apiLine{name, rankMember, "embed " + name + "." + nodeString(fset, m.Type)})
				continue
			}
			for _, n := range m.Names {
				if n.IsExported() {
					sig := strings.TrimPrefix(nodeString(fset, m.Type), "func")
					lines = append(lines, apiLine{name, rankMember, "method " + name + "." + n.Name + sig})
				}
			}
		}
		return lines
	}
	return []apiLine{{name, rankDecl, head + " " + nodeString(fset, s.Type)}}
}

// nodeString prints an AST node as gofmt would, on one line.
func nodeString(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, n); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// writeListings replaces the listings in dir with want, removing those of
// packages that are gone.
func writeListings(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name := range readListings(t, dir) {
		if _, ok := want[name]; !ok {
			require.NoError(t, os.Remove(filepath.Join(dir, name)))
		}
	}
	for name, listing := range want {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(listing), 0o644))
	}
	t.Logf("wrote %d listings to %s", len(want), dir)
}

// readListings returns the listings in dir, by file name.
func readListings(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	require.NoError(t, err)
	out := make(map[string]string, len(names))
	for _, p := range names {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		out[filepath.Base(p)] = string(b)
	}
	return out
}

// listingDiff returns the lines of want missing from have, each after
// "+ ", and those of have missing from want, after "- ", in order of
// want's and have's lines; "" when they are equal.
func listingDiff(have, want string) string {
	if have == want {
		return ""
	}
	haveLines, wantLines := strings.Split(have, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for _, l := range wantLines {
		if !slices.Contains(haveLines, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	for _, l := range haveLines {
		if !slices.Contains(wantLines, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	if b.Len() == 0 {
		return "  (the same lines in another order or repeated)\n"
	}
	return b.String()
}

// sortedKeys returns m's keys, sorted.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestAPIListingCatches shows what a listing holds (exported names only,
// a type's fields and methods with it, signatures as written) and the
// difference TestAPI reports when a name is added or changed.
func TestAPIListingCatches(t *testing.T) {
	const src = `package p

import "io"

const (
	A Kind = iota
	B
	c
)

const Max = 1 << 10

var ErrGone = io.EOF

type Kind int

func (k Kind) String() string { return "" }

type T[K comparable] struct {
	Name string
	io.Reader
	hidden int
}

func (t *T[K]) Close() error { return nil }

func (t *T[K]) reset() {}

type Conn interface {
	io.Closer
	Read(p []byte) (n int, err error)
}

type Alias = Kind

type hidden struct{ Exported int }

func (hidden) Method() {}

func New[K comparable](opts ...func(*T[K])) *T[K] { return nil }

func helper() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	require.NoError(t, err)
	got := exportedAPI(fset, []*ast.File{f})
	assert.Equal(t, []string{
		"const A Kind = iota",
		"type Alias = Kind",
		"const B Kind",
		"type Conn interface",
		"embed Conn.io.Closer",
		"method Conn.Read(p []byte) (n int, err error)",
		"var ErrGone",
		"type Kind int",
		"func (Kind) String() string",
		"const Max = 1 << 10",
		"func New[K comparable](opts ...func(*T[K])) *T[K]",
		"type T[K comparable] struct",
		"embed T.io.Reader",
		"field T.Name string",
		"func (*T[K]) Close() error",
	}, got)

	before := "package p\n\nfunc A()\nfunc B(x int)\n"
	after := "package p\n\nfunc A()\nfunc B(x int64)\nfunc C()\n"
	assert.Equal(t, "+ func B(x int64)\n+ func C()\n- func B(x int)\n", listingDiff(before, after))
	assert.Empty(t, listingDiff(after, after))
}
