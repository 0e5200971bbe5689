package housecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxCommentLines is the longest comment block allowed outside doc.go.
const maxCommentLines = 15

// measuredFigures are the shapes of a figure measured on a machine, as
// opposed to a constant of the code's contract (a default of 30 s, a bound
// of 4 MiB, buckets from 1 µs, RFC 9110, HTTP 429), which has no cue of
// approximation or cost, no benchmark unit and no share of a whole.
var measuredFigures = []struct {
	name string
	re   *regexp.Regexp
}{
	{"a ratio", regexp.MustCompile(`\d(\.\d+)?\s?×|\d(\.\d+)?x\s+(faster|slower|more|less|fewer|as)\b`)},
	{"a benchmark unit", regexp.MustCompile(`\d\s?(ns|B|allocs)/op\b`)},
	{"a percentage", regexp.MustCompile(`\d(\.\d+)?\s?%(\s+(of|fewer|more|less|faster|slower)\b|[),.;:]|\s*$)`)},
	{"a count of machine events", regexp.MustCompile(`\d[\d,]*\s+(fewer\s+|more\s+)?(instructions|cycles|cache[- ]misses|(L1|LL|I1|D1)\b)`)},
	{"an approximate number", regexp.MustCompile(`(?i)\b(about|around|roughly|nearly|almost)\s+(every\s+)?\d[\d,.]*`)},
	{"a cost per request", regexp.MustCompile(`\d[\d,.]*\s?(ns|µs|us|ms|B|bytes|KiB|allocations|allocs)\s+(per|a|each)\s+(request|call|op|operation)\b`)},
	{"a measured time", regexp.MustCompile(`(?i)\b(takes?|took|costs?|spends?|spent|saves?|saved|measured)\s+\d[\d,.]*\s?(ns|µs|us|ms)\b`)},
	{"a size in decimal units", regexp.MustCompile(`\d(\.\d+)?\s?(kB|KB|MB|GB)\b`)},
}

// quoted matches a quoted example in a comment ("1,234.5 µs"), which shows
// a format and is no figure.
var quoted = regexp.MustCompile("\"[^\"]*\"|`[^`]*`")

// TestCommentRules enforces the house rules of comments on every .go file
// of the module but tests and doc.go files (node_modules and testdata
// skipped):
//
//   - no comment block (a go/ast comment group: comment lines with neither
//     a blank line nor code between them) is over maxCommentLines lines: a
//     doc comment states the contract, and the rationale goes to the
//     package's doc.go or to docs/;
//   - no comment gives a figure measured on a machine (see
//     measuredFigures: ratios, ns/op, percentages, instruction or cache
//     miss counts, approximate numbers, costs per request or measured
//     times, sizes in decimal units; quoted examples of a format are not
//     figures): measurements belong in docs/, such as
//     docs/perf/ROUNDS.md, where they can be dated and rerun.
func TestCommentRules(t *testing.T) {
	root := moduleRoot(t)
	for _, path := range sourceFiles(t, root) {
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		var problems []string
		for _, g := range f.Comments {
			problems = append(problems, checkBlock(fset, rel, g)...)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// checkBlock returns the rules g breaks: too long, or a measured figure.
// The figures are looked for in the block's text joined into one line, so
// that one split over two lines is found too.
func checkBlock(fset *token.FileSet, rel string, g *ast.CommentGroup) []string {
	var problems []string
	first, last := fset.Position(g.Pos()).Line, fset.Position(g.End()).Line
	if n := last - first + 1; n > maxCommentLines {
		problems = append(problems, fmt.Sprintf("%s:%d: a comment block of %d lines (at most %d): keep the contract, move the rest to doc.go or docs/", rel, first, n, maxCommentLines))
	}
	var text strings.Builder
	var lines []int // the line of each byte of text
	for _, c := range g.List {
		line := fset.Position(c.Pos()).Line
		for i, l := range strings.Split(c.Text, "\n") {
			l = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l, "//"), "/*"))
			l = quoted.ReplaceAllStringFunc(l, func(q string) string { return strings.Repeat(" ", len(q)) })
			text.WriteString(l + " ")
			for range len(l) + 1 {
				lines = append(lines, line+i)
			}
		}
	}
	for _, f := range measuredFigures {
		for _, m := range f.re.FindAllStringIndex(text.String(), -1) {
			problems = append(problems, fmt.Sprintf("%s:%d: %s in a comment (%q): move it to docs/", rel, lines[m[0]], f.name, text.String()[m[0]:m[1]]))
		}
	}
	return problems
}

// moduleRoot returns the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// sourceFiles returns the .go files under root that are neither tests nor
// doc.go, outside node_modules, testdata and hidden directories.
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") && name != "doc.go" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
