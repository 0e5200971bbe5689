package buildversion_test

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/cmd/internal/buildversion"
	"github.com/vigil-mcp/vigil/internal/release"
)

// TestOf: the version a build set with -ldflags wins; else Vigil's, as
// the source holds it, whatever the go command stamped.
func TestOf(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "v0.1.0-3-g0123456-dirty", buildversion.Of("v0.1.0-3-g0123456-dirty"))
	assert.Equal(t, release.Version, buildversion.Of(""))
}

// TestLine: -version names the commit (12 hex digits) and its uncommitted
// changes when the build recorded them, and the Go version the build used.
func TestLine(t *testing.T) {
	t.Parallel()
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "vcs.modified", Value: "true"}, // before the revision: the line's order is its own
		{Key: "-trimpath", Value: "true"},
		{Key: "vcs.revision", Value: "8f239c4f3604d1c0ffee8f239c4f3604d1c0ffee"},
	}}
	assert.Equal(t, "vigil v0.1.0 (revision 8f239c4f3604, modified, go1.26.8"+platform, buildversion.Line("vigil", "v0.1.0", info))
	info.Settings[0].Value = "false"
	assert.Equal(t, "vigil v0.1.0 (revision 8f239c4f3604, go1.26.8"+platform, buildversion.Line("vigil", "v0.1.0", info))
	assert.Equal(t, "vigil v0.1.0 (go1.26.8"+platform, buildversion.Line("vigil", "v0.1.0", &debug.BuildInfo{GoVersion: "go1.26.8"}))
	assert.Equal(t, "vigil (devel) ("+runtime.Version()+platform, buildversion.Line("vigil", "(devel)", nil))
}
