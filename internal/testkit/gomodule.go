package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// GoInModule writes files (path: content) into a temporary module named
// example.com/check that requires this one, found at root, through a
// replace directive and uses its go.sum, then runs the go command with
// args there, offline, and returns its combined output and error. It
// skips t when there is no go command.
func GoInModule(t testing.TB, root string, files map[string]string, args ...string) ([]byte, error) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	all := map[string]string{
		"go.mod": "module example.com/check\n\ngo 1.26.0\n\nrequire github.com/vigil-mcp/vigil v0.0.0\n\nreplace github.com/vigil-mcp/vigil => " + root + "\n",
		"go.sum": string(sum),
	}
	for name, content := range files {
		all[name] = content
	}
	for name, content := range all {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local")
	return cmd.CombinedOutput()
}
