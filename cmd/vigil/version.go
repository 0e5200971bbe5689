package main

import (
	"errors"

	"github.com/vigil-mcp/vigil/cmd/internal/buildversion"
)

// version is the version a build sets with -ldflags "-X main.version=..."
// (deploy/Dockerfile's VERSION); "" when it sets none, and vigil reports
// Vigil's version as the source holds it (buildversion.Of).
var version string

// errVersion is what parseConfig returns for -version: main prints
// buildversion.Line and exits 0.
var errVersion = errors.New("-version")

// buildVersion returns vigil's version, as -version, the MCP serverInfo,
// OpenTelemetry's service.version and /debug/vigil report it.
func buildVersion() string { return buildversion.Of(version) }
