package buildversion_test

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/cmd/internal/buildversion"
)

// TestOf: the version a build set with -ldflags wins; else the main
// module's version the go command stamped (a tag, a pseudo-version,
// +dirty); else "(devel)", as when the go command knew none.
func TestOf(t *testing.T) {
	t.Parallel()
	stamped := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/vigil-mcp/vigil", Version: v}}
	}
	for _, tt := range []struct {
		name string
		set  string
		info *debug.BuildInfo
		want string
	}{
		{name: "ldflags", set: "v0.1.0", info: stamped("v0.0.0-20261127000000-0123456789ab"), want: "v0.1.0"},
		{name: "ldflags without build info", set: "v0.1.0-3-g0123456-dirty", want: "v0.1.0-3-g0123456-dirty"},
		{name: "go install @v0.1.0 or a tagged checkout", info: stamped("v0.1.0"), want: "v0.1.0"},
		{name: "uncommitted changes", info: stamped("v0.1.0+dirty"), want: "v0.1.0+dirty"},
		{name: "between tags", info: stamped("v0.1.1-0.20261127065735-8f239c4f3604"), want: "v0.1.1-0.20261127065735-8f239c4f3604"},
		{name: "go run", info: stamped("(devel)"), want: "(devel)"},
		{name: "no module version", info: stamped(""), want: "(devel)"},
		{name: "no build info", want: "(devel)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, buildversion.Of(tt.set, tt.info))
		})
	}
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
