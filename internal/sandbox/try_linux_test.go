package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vigil-mcp/vigil/internal/sandbox"
)

func TestTry(t *testing.T) {
	cmd := exec.Command(os.Getenv("TRY_PROG"), "-c", "id; echo pid $$; ls /proc | head -5; cat /proc/1/environ | head -c 50; echo; cat /etc/shadow; ls /root; ulimit -a | head -3; echo x > /tmp/x; ls -la $HOME")
	cmd.Env = []string{"PATH=/root/.pyenv/shims:/usr/bin:/bin"}
	if os.Getenv("TRY_ARGS") != "" {
		cmd.Args = append([]string{cmd.Path}, strings.Fields(os.Getenv("TRY_ARGS"))...)
		cmd.Stdin = strings.NewReader(os.Getenv("TRY_IN"))
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	home := t.TempDir()
	l, err := sandbox.Prepare(cmd, sandbox.Policy{Home: home, Processes: 64, MemoryBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	l.Started()
	if err != nil {
		t.Fatal(sandbox.StartError(err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, werr := l.Wait(ctx)
	_ = cmd.Wait()
	t.Logf("wait: %v\n%s", werr, out.String())
}
