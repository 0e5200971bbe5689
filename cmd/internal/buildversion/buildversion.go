// Package buildversion says which version of a command is running: the one
// a build set with -ldflags -X, else Vigil's, which the source holds
// (internal/release) ([Of]), and the line a -version flag prints ([Line]).
// Only cmd/ imports it.
package buildversion

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/vigil-mcp/vigil/internal/release"
)

// Of returns set when a build set it (deploy/Dockerfile's VERSION), else
// Vigil's version as the source holds it (release.Version): a clone
// without the repository's tags, an archive or a vendored copy reports
// the same as a tagged checkout, where the go command would stamp
// v0.0.0-… pseudo-versions. The commit is in [Line].
func Of(set string) string {
	if set != "" {
		return set
	}
	return release.Version
}

// Line returns what command's -version prints for its version v and build
// info (nil: unknown): "vigil v0.1.0 (revision 0123456789ab, modified,
// go1.26.8 linux/amd64)", the commit and its uncommitted changes when the
// build recorded them.
func Line(command, v string, info *debug.BuildInfo) string {
	var revision, modified string
	goVersion := runtime.Version()
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value[:min(len(s.Value), 12)]
			case "vcs.modified":
				modified = s.Value
			}
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
	}
	var details []string
	if revision != "" {
		details = append(details, "revision "+revision)
	}
	if modified == "true" {
		details = append(details, "modified")
	}
	details = append(details, goVersion+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return command + " " + v + " (" + strings.Join(details, ", ") + ")"
}
