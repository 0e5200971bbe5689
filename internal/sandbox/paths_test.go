package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInstallPaths: a command reads its program's installation and the
// files its arguments name (a node_modules tree whole), never a
// directory an argument names: the profile grants those.
func TestInstallPaths(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"opt/tool/bin", "opt/tool/lib", "app/node_modules/@x/server/dist", "data"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	prog := filepath.Join(root, "opt/tool/bin/tool")
	script := filepath.Join(root, "app/node_modules/@x/server/dist/index.js")
	for _, f := range []string{prog, script} {
		require.NoError(t, os.WriteFile(f, nil, 0o755))
	}
	got := installPaths(prog, []string{script, filepath.Join(root, "data"), "--flag", "k=v", "relative-missing"}, root)
	assert.Contains(t, got, filepath.Join(root, "opt/tool/bin"))
	assert.Contains(t, got, filepath.Join(root, "opt/tool/lib"))
	assert.Contains(t, got, filepath.Join(root, "app/node_modules"))
	assert.NotContains(t, got, filepath.Join(root, "data"), "a directory argument is the profile's to grant")
	assert.NotContains(t, got, filepath.Join(root, "opt/tool"), "not the whole installation: its bin and lib")

	// A program that is a node_modules/.bin link to a package's script
	// reads the whole tree, where the script's imports are.
	bin := filepath.Join(root, "app/node_modules/.bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.Symlink("../@x/server/dist/index.js", filepath.Join(bin, "server")))
	got = installPaths(filepath.Join(bin, "server"), nil, root)
	assert.Contains(t, got, filepath.Join(root, "app/node_modules"))
}
