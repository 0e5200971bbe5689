package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/cmd/internal/inspectortest"
)

// The MCP Inspector's SEP-2640 checks pass on vigil -skills, in both
// protocol eras: skills/list and skills/get, every file's digest and size
// verified (--require-digests).
func TestInspectorSkills(t *testing.T) {
	cli := inspectortest.Require(t)
	svc := startService(t, "-http", "127.0.0.1:0", "-skills", skillsTestdata)
	url := svc.base + "/mcp"
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			r := cli.Run(t, url, "--protocol-era", era, "--method", "skills/list", "--verify", "--require-digests")
			assert.Equal(t, 0, r.Code, "%s", r.Output())
			assert.Contains(t, r.Output(), "Verified 2 skills and 3 files: no conformance errors.")
			r = cli.Run(t, url, "--protocol-era", era, "--method", "skills/get",
				"--uri", "skill://acme/billing/refunds/SKILL.md", "--verify", "--require-digests")
			assert.Equal(t, 0, r.Code, "%s", r.Output())
			assert.Contains(t, r.Output(), "Verified 1 skill and 2 files: no conformance errors.")
		})
	}
}
