package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/middleware/policy"
)

// maxPolicyFile bounds the file of -auth-policy.
const maxPolicyFile = 1 << 20

// readPolicy reads the file of -auth-policy (nil without one): YAML as
// policy.Config reads it, errors naming the file and the line. Its
// expressions are compiled by newPolicies.
func readPolicy(cfg config) (*policy.Config, error) {
	if cfg.authPolicyFile == "" {
		return nil, nil
	}
	if !cfg.authEnabled() {
		return nil, errors.New("-auth-policy needs -auth-issuer: policies decide by the principal a token names")
	}
	if cfg.stdio {
		return nil, errors.New("-auth-policy applies to HTTP requests, whose tokens name a principal; the stdio client has none")
	}
	f, err := os.Open(cfg.authPolicyFile)
	if err != nil {
		return nil, fmt.Errorf("-auth-policy: %w", err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxPolicyFile+1))
	if err != nil {
		return nil, fmt.Errorf("-auth-policy: %w", err)
	}
	if len(b) > maxPolicyFile {
		return nil, fmt.Errorf("-auth-policy %s: larger than %d bytes", cfg.authPolicyFile, maxPolicyFile)
	}
	var pc policy.Config
	if err := yaml.Unmarshal(b, &pc); err != nil {
		return nil, fmt.Errorf("-auth-policy %s: %w", cfg.authPolicyFile, err)
	}
	return &pc, nil
}

// newPolicies compiles the policies of -auth-policy, counted in registry
// and logging to logger: a bad expression fails the start, naming its
// line and position.
func newPolicies(cfg config, registry prometheus.Registerer, logger *slog.Logger) (*policy.Set, error) {
	pc := *cfg.authPolicy
	pc.Registerer, pc.Logger = registry, logger
	set, err := policy.New(pc)
	if err != nil {
		return nil, fmt.Errorf("-auth-policy %s: %w", cfg.authPolicyFile, err)
	}
	logger.Info("tool policies", "file", cfg.authPolicyFile, "tools", len(pc.Tools), "default", pc.Default != "")
	return set, nil
}

// checkPolicyTools refuses a policy of a tool that is not one of names
// (sorted): a policy on a misspelled tool would protect nothing.
func checkPolicyTools(cfg config, names []string) error {
	if cfg.authPolicy == nil {
		return nil
	}
	return flagvalue.KnownTools("-auth-policy "+cfg.authPolicyFile, names, maps.Keys(cfg.authPolicy.Tools))
}
