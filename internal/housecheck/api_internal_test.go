package housecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAPINamesNoInternalPackage checks that no line of a public package's
// API listing (api/*.txt) names a type, constant or function of an
// internal package: what users see, they can name, read the doc of and
// rely on. Each file's exported lines are checked against the names
// under which that file imports an internal package.
func TestAPINamesNoInternalPackage(t *testing.T) {
	root := docsRoot(t)
	pkgs := publicPackages(t, root)
	require.Contains(t, pkgs, "transport/streamable", "the walk must reach the packages")
	for _, rel := range pkgs {
		bp, err := apiBuildContext().ImportDir(filepath.Join(root, filepath.FromSlash(rel)), 0)
		require.NoError(t, err)
		for _, name := range bp.GoFiles {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, qual := range internalImports(f) {
				named := regexp.MustCompile(`\b` + regexp.QuoteMeta(qual) + `\.[A-Z]`)
				for _, line := range exportedAPI(fset, []*ast.File{f}) {
					assert.False(t, named.MatchString(line), "%s/%s: the API names internal package %s: %s", rel, name, qual, line)
				}
			}
		}
	}
}

// internalImports returns the names under which f imports packages of an
// internal/ directory.
func internalImports(f *ast.File) []string {
	var names []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || !strings.Contains("/"+p+"/", "/internal/") {
			continue
		}
		if imp.Name != nil {
			names = append(names, imp.Name.Name)
			continue
		}
		names = append(names, path.Base(p))
	}
	return names
}
