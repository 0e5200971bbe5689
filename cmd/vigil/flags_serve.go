package main

import (
	"errors"
	"flag"
	"time"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
)

// serveFlags are where and what vigil serves: its listeners (-http,
// -stdio, -admin-http), the hosts it answers (-allowed-hosts), whether it
// serves unauthenticated off loopback, its skills, and how long its
// shutdown takes.
type serveFlags struct {
	allowedHosts string // -allowed-hosts, comma-separated
}

func (g *serveFlags) register(fs *flag.FlagSet, cfg *config) {
	fs.StringVar(&cfg.httpAddr, "http", "127.0.0.1:8080", "`address` the HTTP server listens on: MCP at /mcp, and /metrics, /healthz, /readyz, /debug/vigil unless -admin-http")
	fs.BoolVar(&cfg.stdio, "stdio", false, "serve one MCP session on standard input and output instead of HTTP")
	fs.DurationVar(&cfg.grace, "shutdown-grace", 10*time.Second, "how long shutdown may take after SIGTERM or SIGINT: in-flight requests run until they are cancelled, then stdio upstreams that have not exited are killed (they get a quarter of it, 100ms to 2s, and in-flight requests the rest)")
	fs.StringVar(&g.allowedHosts, "allowed-hosts", "", "comma-separated Host `names` accepted besides loopback names (DNS rebinding protection)")
	fs.BoolVar(&cfg.allowUnauthenticated, "allow-unauthenticated", false, "serve /mcp without authorization on a non-loopback address (loopback never needs it)")
	fs.StringVar(&cfg.adminAddr, "admin-http", "", "`address` of a separate listener for /metrics, /healthz, /readyz and /debug/vigil, which then leave the MCP listener")
	cfg.discovery.Register(fs)
	fs.StringVar(&cfg.skillsDir, "skills", "", "`directory` of Agent Skills to serve (the skills extension): every subdirectory holding a SKILL.md is a skill at its path (acme/billing/refunds), its files read once at start")
}

func (g *serveFlags) resolve(cfg *config, _ flagSource) error {
	cfg.allowedHosts = flagvalue.SplitList(g.allowedHosts)
	if err := cfg.discovery.Check(); err != nil {
		return err
	}
	switch {
	case cfg.grace < 0:
		return errors.New("-shutdown-grace must not be negative")
	case cfg.stdio && cfg.adminAddr != "":
		return errors.New("-admin-http serves the observability endpoints of the HTTP server; with -stdio there is none")
	}
	return nil
}
