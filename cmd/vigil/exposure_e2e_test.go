package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/exposure"
	"github.com/vigil-mcp/vigil/internal/cmdline"
)

// vigil -http on every address, and nothing else, refuses once, naming
// every flag missing, and the example its refusal gives starts (with the
// example's admin port made a free one, so that tests do not collide).
func TestPublicAddressRefusalExampleStarts(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(vigilBin, "-http", "0.0.0.0:0").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	msg := string(out)
	assert.Equal(t, 1, strings.Count(msg, "vigil: "), "one refusal:\n%s", msg)
	for _, f := range []string{"-auth-issuer URL (OAuth 2.1 authorization) or, if something in front of vigil authorizes requests, -allow-unauthenticated", "-allowed-hosts NAMES", "-admin-http ADDR"} {
		assert.Contains(t, msg, "\n  "+f, "every missing flag named")
	}
	_, example, ok := strings.Cut(msg, "for example:\n  ")
	require.True(t, ok, "an example:\n%s", msg)
	args, err := cmdline.Split(strings.TrimSpace(example))
	require.NoError(t, err)
	require.Equal(t, "vigil", args[0])
	args = args[1:]
	for i, a := range args {
		if a == exposure.ExampleAdminAddr {
			args[i] = "127.0.0.1:0"
		}
	}
	svc := startService(t, args...)
	assert.Contains(t, svc.logs.String(), "serving /mcp without authorization on a non-loopback address")
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second), "exit status 0 after SIGTERM")
}
