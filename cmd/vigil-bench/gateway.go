package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// runGateway measures what a gateway hop costs: vigil (the upstream,
// serving its demo tools over HTTP) called directly, against the same
// vigil called through a second one that fronts it with -upstream, over
// HTTP and then over stdio (a vigil -stdio process per downstream
// session). The load is the same; the CPU per request of the gateway
// row is the gateway process's own: the hop's cost, since the upstream
// does the same work either way (the stdio upstreams' CPU is not in it).
// Each hop is measured twice: with both servers taking all the load
// they can (the direct one then serves about three times the gateway's
// rate, and is never idle), and at one rate, both held to 0.8 of what the
// gateway took in its warm-up, the requests spaced evenly (-paced): what
// the hop costs at traffic an operator puts through it.
func runGateway(ctx context.Context, cfg config, dir string) (err error) {
	fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil and the load generator into %s\n", dir)
	if err := goBuild(ctx, cfg.goCmd, cfg.vigilSrc, dir, "github.com/vigil-mcp/vigil/cmd/vigil"); err != nil {
		return err
	}
	if err := goBuild(ctx, cfg.goCmd, "", dir, "github.com/vigil-mcp/vigil/cmd/vigil-bench/load"); err != nil {
		return err
	}
	bin := filepath.Join(dir, "vigil")
	logOf := func(name string) string {
		if cfg.vigilLog != "" {
			return cfg.vigilLog
		}
		return filepath.Join(dir, name+".log")
	}
	upArgs := []string{"-http", "127.0.0.1:0"}
	up, upURL, err := startVigil(ctx, bin, upArgs, logOf("upstream"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProcess(up, "the upstream vigil")) }()
	fmt.Printf("vigil-bench  %s, a gateway hop\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("direct       %s (pid %d): vigil %s\n", upURL, up.Process.Pid, strings.Join(upArgs, " "))
	for _, hop := range []struct{ name, target string }{
		{"gateway/http", "e=" + upURL},
		{"gateway/stdio", "e=" + bin + " -stdio"},
	} {
		args := []string{"-http", "127.0.0.1:0", "-upstream", hop.target}
		gw, gwURL, err := startVigil(ctx, bin, args, logOf(strings.ReplaceAll(hop.name, "/", "-")))
		if err != nil {
			return err
		}
		fmt.Printf("\n%-12s %s (pid %d): vigil %s\n", hop.name, gwURL, gw.Process.Pid, strings.Join(args, " "))
		fmt.Printf("             against direct: the ratio of CPU/req is the gateway's own over the upstream's\n")
		err = runLoad(ctx, cfg, dir, "direct", upURL, up, "", hop.name, gwURL, gw, "")
		if err == nil {
			fmt.Printf("\n%-12s at one rate: both held to 0.8 of the gateway's rate\n", hop.name)
			err = runLoad(ctx, cfg, dir, "direct@rate", upURL, up, "", hop.name+"@rate", gwURL, gw, "", "-paced", "0.8")
		}
		if stopErr := stopProcess(gw, hop.name); err == nil {
			err = stopErr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
