package release_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/release"
)

// TestVersionFollowsChangelog: Version is a semantic version, with -dev
// while CHANGELOG.md has changes under Unreleased, and newer than the
// last release the changelog names.
func TestVersionFollowsChangelog(t *testing.T) {
	t.Parallel()
	require.Regexp(t, `^v\d+\.\d+\.\d+(-dev)?$`, release.Version)
	log, err := os.ReadFile("../../CHANGELOG.md")
	require.NoError(t, err)
	last := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\]`).FindStringSubmatch(string(log))
	require.NotNil(t, last, "a released version in CHANGELOG.md")
	unreleased, _, _ := strings.Cut(strings.SplitN(string(log), "## [Unreleased]", 2)[1], "\n## [")
	if strings.Contains(unreleased, "\n- ") {
		assert.True(t, strings.HasSuffix(release.Version, "-dev"), "changes under Unreleased: %s is not a release", release.Version)
		assert.NotEqual(t, release.Version, "v"+last[1]+"-dev", "the next version, not the last one's")
	} else {
		assert.Equal(t, "v"+last[1], release.Version, //nolint:testifylint // the expected value is the CHANGELOG's
			"a release commit names its version")
	}
}
