package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/sandbox"
)

// run runs script under /bin/sh confined by p and returns what it
// printed, one line per probe.
func run(t *testing.T, p sandbox.Policy, script string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	l, err := sandbox.Prepare(cmd, p)
	require.NoError(t, err)
	err = cmd.Start()
	l.Started()
	require.NoError(t, sandbox.StartError(err))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = l.Wait(ctx)
	require.NoError(t, err)
	_ = cmd.Wait()
	return out.String()
}

// TestConfined: a confined shell reads the system's files but not
// /etc/shadow nor another directory, writes its private directory and
// what it is granted only, sees no process but its own, has no
// capability, no network but its loopback, and its bounds.
func TestConfined(t *testing.T) {
	home, granted, other := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "secret"), []byte("x"), 0o600))
	out := run(t, sandbox.Policy{Home: home, Write: []string{granted}, MemoryBytes: 256 << 20, Processes: 64, OpenFiles: 100}, `
probe() { if "$@" >/dev/null 2>&1; then echo "$name yes"; else echo "$name no"; fi; }
name=system probe cat /etc/os-release
name=shadow probe cat /etc/shadow
name=other probe cat `+other+`/secret
name=home probe sh -c "echo x > $HOME/f"
name=granted probe sh -c "echo x > `+granted+`/f"
name=tmp probe sh -c "echo x > /tmp/sandbox-test-$$"
echo "pids $(ls /proc | grep -c '^[0-9]')"
echo "self $$"
echo "$(grep CapEff /proc/self/status)"
echo "$(grep NoNewPrivs /proc/self/status)"
echo "$(grep Seccomp: /proc/self/status)"
echo "links $(ls /sys/class/net 2>/dev/null | tr '\n' ' ')"
echo "nofile $(ulimit -n) data $(ulimit -d)"
`)
	for _, want := range []string{
		"system yes", "shadow no", "other no", "home yes", "granted yes", "tmp no",
		"self 1", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "nofile 100 data 262144",
	} {
		assert.Contains(t, out, want, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(line, "pids "); ok {
			assert.LessOrEqual(t, len(n), 1, "a handful of processes, its own: %s", line)
		}
	}
	_, err := os.Stat(filepath.Join(granted, "f"))
	assert.NoError(t, err, "what it wrote where it is granted")
}

// TestLauncherReportsItsFailure: a program the launcher cannot execute
// fails the start with the launcher's word, not a process that dies.
func TestLauncherReportsItsFailure(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	cmd := exec.Command("/bin/sh")
	cmd.Path = missing
	l, err := sandbox.Prepare(cmd, sandbox.Policy{})
	require.NoError(t, err)
	err = cmd.Start()
	l.Started()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = l.Wait(ctx)
	require.ErrorContains(t, err, "executing "+missing+": no such file or directory")
	_ = cmd.Wait()
}
