package validate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the root of the Vigil repository, two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(gomod, []byte("module github.com/vigil-mcp/vigil\n")),
		"%s is not the root of the Vigil repository", root)
	return root
}

// repoPath joins a slash-separated path relative to the repository root.
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	return filepath.Join(repoRoot(t), filepath.FromSlash(rel))
}

// readRepoFile reads a file given relative to the repository root.
func readRepoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(repoPath(t, rel))
	require.NoError(t, err)
	return b
}

// promtool runs promtool with args in dir and returns its combined output
// and error. promtool comes with the Debian package prometheus (make
// system-deps installs it); without it the test fails rather than skips, so
// that make test never passes without these checks.
func promtool(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is not on PATH: apt-get install prometheus (or make system-deps)")
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
