package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The one-tool servers that -weight builds: the README's first program
// (read from the checkout's README.md), and the same server written with
// go-sdk and with mcp-go, each in a module of its own that requires what
// a user's would.
const (
	weightGoSDK = "github.com/modelcontextprotocol/go-sdk@v1.8.0"
	weightMCPGo = "github.com/mark3labs/mcp-go@v1.2.1"
)

var weightPrograms = []struct {
	name, require, src string
}{
	{"vigil", "", ""}, // the README's first Go block, read from the checkout
	{"go-sdk", weightGoSDK, `package main

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "forecast"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		City string ` + "`json:\"city\" jsonschema:\"the city to forecast\"`" + `
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + in.City}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	panic(http.ListenAndServe("127.0.0.1:8080", h))
}
`},
	{"mcp-go", weightMCPGo, `package main

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("weather", "1.0.0")
	s.AddTool(mcp.NewTool("forecast", mcp.WithString("city", mcp.Required(), mcp.Description("the city to forecast"))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("sunny in " + req.GetString("city", "")), nil
		})
	panic(server.NewStreamableHTTPServer(s).Start("127.0.0.1:8080"))
}
`},
}

// runWeight measures what each one-tool server links and costs to build:
// the packages outside the standard library (go list -deps), the binary
// (go build, default flags), and the build from an empty build cache
// (GOCACHE in a new directory; the module cache is shared, so downloads
// are not counted), each in a module of its own (vigil's replaced by the
// checkout, -vigil-src or this one). The cold builds run one after the
// other on the machine as it is: run it when nothing else builds.
func runWeight(ctx context.Context, cfg config, dir string) error {
	src, err := filepath.Abs(cfg.vigilSrc)
	if err != nil {
		return err
	}
	readme, err := os.ReadFile(filepath.Join(src, "README.md"))
	if err != nil {
		return err
	}
	first := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(readme)
	if first == nil {
		return fmt.Errorf("%s/README.md has no Go block", src)
	}
	fmt.Printf("%-8s %10s %12s %12s\n", "server", "packages", "binary MB", "cold build")
	for _, p := range weightPrograms {
		if p.src == "" {
			p.src = string(first[1])
		}
		mod := filepath.Join(dir, "weight-"+p.name)
		if err := os.MkdirAll(mod, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(p.src), 0o644); err != nil {
			return err
		}
		steps := [][]string{{"mod", "init", "example.com/weight"}}
		if p.require == "" {
			steps = append(steps, []string{"mod", "edit", "-require", "github.com/vigil-mcp/vigil@v0.0.0", "-replace", "github.com/vigil-mcp/vigil=" + src})
		} else {
			steps = append(steps, []string{"get", p.require})
		}
		steps = append(steps, []string{"mod", "tidy"})
		for _, args := range steps {
			if _, err := goIn(ctx, cfg.goCmd, mod, nil, args...); err != nil {
				return fmt.Errorf("%s: go %s: %w", p.name, strings.Join(args, " "), err)
			}
		}
		out, err := goIn(ctx, cfg.goCmd, mod, nil, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
		if err != nil {
			return fmt.Errorf("%s: go list: %w", p.name, err)
		}
		pkgs := strings.Fields(string(out))
		cache, err := os.MkdirTemp(dir, "gocache-")
		if err != nil {
			return err
		}
		bin := filepath.Join(dir, p.name+".bin")
		start := time.Now()
		if _, err := goIn(ctx, cfg.goCmd, mod, []string{"GOCACHE=" + cache}, "build", "-o", bin, "."); err != nil {
			return fmt.Errorf("%s: go build: %w", p.name, err)
		}
		cold := time.Since(start)
		fi, err := os.Stat(bin)
		if err != nil {
			return err
		}
		fmt.Printf("%-8s %10d %12.1f %12s\n", p.name, len(pkgs), float64(fi.Size())/1e6, cold.Round(time.Second))
		if err := os.RemoveAll(cache); err != nil {
			return err
		}
	}
	return nil
}

// goIn runs the go command with args in dir, env added to the process's,
// and returns its standard output.
func goIn(ctx context.Context, goCmd, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GOFLAGS=-mod=mod", "GOWORK=off"}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}
