package validate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// labelRE is one KEY="VALUE" pair of a LABEL instruction.
var labelRE = regexp.MustCompile(`([a-z0-9.-]+)="([^"]*)"`)

// finalStage returns the instructions of a Dockerfile's last stage, from
// its FROM on.
func finalStage(ins []instruction) []instruction {
	last := 0
	for i, in := range ins {
		if in.cmd == "FROM" {
			last = i
		}
	}
	return ins[last:]
}

// TestDockerfilesMultiArchLabeled checks both images' recipes for what
// people who pull them read: the Go stage runs on the build platform and
// cross-compiles for the target (--platform=$BUILDPLATFORM, TARGETOS and
// TARGETARCH passed to go build), so that buildx builds linux/amd64 and
// linux/arm64 without emulating the compiler; the final stage carries the
// OCI labels (source, version, revision, licenses — the LICENSE file's —,
// title, description) and the MCP Registry's ownership label, each with
// a value, and runs as a numeric non-root user; make image builds both
// platforms with an SBOM.
func TestDockerfilesMultiArchLabeled(t *testing.T) {
	for _, file := range []string{dockerfile, dockerfileGateway} {
		t.Run(file, func(t *testing.T) {
			ins := parseDockerfile(t, readRepoFile(t, file))
			require.Equal(t, "FROM", ins[0].cmd)
			assert.True(t, strings.HasPrefix(ins[0].args, "--platform=$BUILDPLATFORM "), "the builder runs on the build platform: FROM %s", ins[0].args)
			var targetArgs bool
			for _, in := range ins {
				if in.cmd == "ARG" && strings.Fields(in.args)[0] == "TARGETOS" && strings.Contains(in.args, "TARGETARCH") {
					targetArgs = true
				}
				if in.cmd == "FROM" && in != ins[0] {
					break
				}
			}
			assert.True(t, targetArgs, "the build stage declares ARG TARGETOS TARGETARCH")
			assert.Contains(t, goBuildCommand(t, ins), "GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build", "the build cross-compiles for the target")

			labels := map[string]string{}
			var user string
			args := map[string]bool{}
			for _, in := range finalStage(ins) {
				switch in.cmd {
				case "LABEL":
					for _, m := range labelRE.FindAllStringSubmatch(in.args, -1) {
						labels[m[1]] = m[2]
					}
				case "USER":
					user = in.args
				case "ARG":
					args[strings.SplitN(in.args, "=", 2)[0]] = true
				}
			}
			for _, key := range []string{"source", "version", "revision", "licenses", "title", "description"} {
				assert.NotEmpty(t, labels["org.opencontainers.image."+key], "label org.opencontainers.image.%s", key)
			}
			assert.Equal(t, "https://github.com/vigil-mcp/vigil", labels["org.opencontainers.image.source"])
			assert.Equal(t, "${VERSION}", labels["org.opencontainers.image.version"])
			assert.True(t, args["VERSION"], "the final stage declares ARG VERSION, which its label reads")
			assert.Equal(t, "${REVISION}", labels["org.opencontainers.image.revision"])
			assert.True(t, args["REVISION"], "the final stage declares ARG REVISION")
			assert.Equal(t, "${REGISTRY_NAME}", labels["io.modelcontextprotocol.server.name"], "the registry's ownership label")
			assert.True(t, args["REGISTRY_NAME"])
			assert.Contains(t, string(readRepoFile(t, "LICENSE")), "Apache License", "the license label names the LICENSE file's")
			assert.Equal(t, "Apache-2.0", labels["org.opencontainers.image.licenses"])

			uid, gid, ok := strings.Cut(user, ":")
			require.True(t, ok, "USER %q is UID:GID", user)
			for _, id := range []string{uid, gid} {
				n, err := strconv.Atoi(id)
				require.NoError(t, err, "USER %q is numeric, for runAsNonRoot", user)
				assert.NotZero(t, n, "USER %q is not root", user)
			}
		})
	}
	makefile := string(readRepoFile(t, "Makefile"))
	for _, want := range []string{"IMAGE_PLATFORMS ?= linux/amd64,linux/arm64", "docker buildx build --platform", "--sbom=true", "deploy/$$file", "Dockerfile:vigil Dockerfile.gateway:vigil-gateway", "image: skipped"} {
		assert.Contains(t, makefile, want, "make image")
	}
	assert.Equal(t, fmt.Sprintf("%d:%d", nonrootUID, nonrootUID), userOf(t, dockerfile))
}

// userOf is the USER of file's final stage.
func userOf(t *testing.T, file string) string {
	t.Helper()
	for _, in := range finalStage(parseDockerfile(t, readRepoFile(t, file))) {
		if in.cmd == "USER" {
			return in.args
		}
	}
	return ""
}
