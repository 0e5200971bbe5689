// Package buildversion says which version of a command is running: the one
// a release build set with -ldflags -X, or the one the go command stamped
// into the binary ([Of]), and the line a -version flag prints ([Line]).
// Only cmd/ imports it.
package buildversion

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// devel is the version of a build that knows none, as the go command
// names it (go run, -buildvcs=false).
const devel = "(devel)"

// Of returns set when a build set it; else the main module's version in
// info, which the go command stamps: the tag's (v0.1.0) for `go install
// github.com/vigil-mcp/vigil/cmd/vigil@v0.1.0`, and since Go 1.24 for a
// build in a git checkout too (a pseudo-version between tags, +dirty for
// uncommitted changes); else "(devel)". info may be nil.
func Of(set string, info *debug.BuildInfo) string {
	switch {
	case set != "":
		return set
	case info != nil && info.Main.Version != "":
		return info.Main.Version
	}
	return devel
}

// Running returns [Of] set and the running binary's build info.
func Running(set string) string {
	info, _ := debug.ReadBuildInfo()
	return Of(set, info)
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
