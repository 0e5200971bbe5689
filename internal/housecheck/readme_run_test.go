package housecheck

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestReadmeQuickStartAnswers builds the README's first program as printed
// (its two listen addresses moved to free loopback ports, so that tests
// can run side by side), runs it, and calls its tool as a newcomer or a
// model would: {"city":"Paris"} gets "sunny in Paris", and the tool's
// schema names the property city.
func TestReadmeQuickStartAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	root := docsRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := goBlock.FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no Go code block")
	}
	mcpAddr, adminAddr := freeLoopback(t), freeLoopback(t)
	src := string(block[1])
	for from, to := range map[string]string{`"127.0.0.1:8080"`: `"` + mcpAddr + `"`, `"127.0.0.1:9090"`: `"` + adminAddr + `"`} {
		if !strings.Contains(src, from) {
			t.Fatalf("the README's first program does not listen on %s", from)
		}
		src = strings.Replace(src, from, to, 1)
	}
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := testkit.GoInModule(t, root, map[string]string{"quickstart/main.go": src}, "build", "-o", bin, "./quickstart"); err != nil {
		t.Fatalf("the README's first program does not build: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(t.Context(), bin)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	awaitReady(t, "http://"+adminAddr+"/readyz")

	c := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: "http://" + mcpAddr + "/mcp"}))
	c.Initialize(protocol.Version20251125, nil)
	tools := c.ListTools()
	if len(tools) != 1 {
		t.Fatalf("tools/list gave %d tools, want forecast alone", len(tools))
	}
	if schema := string(tools[0].InputSchema); !strings.Contains(schema, `"city"`) {
		t.Fatalf("forecast's input schema is %s, want the property city", schema)
	}
	if got := c.CallTool("forecast", map[string]any{"city": "Paris"}); got.IsError || got.Text() != "sunny in Paris" {
		t.Fatalf(`forecast {"city":"Paris"} = %+v, want "sunny in Paris"`, got)
	}
}

// freeLoopback is a loopback address whose port was free a moment ago.
func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// awaitReady polls url until it answers 200, for at most a minute (a
// program starting: no event to wait on but its answer).
func awaitReady(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not answer 200 within a minute", url)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
