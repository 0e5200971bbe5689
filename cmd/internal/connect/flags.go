package connect

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/gateway/accounts"
	"github.com/vigil-mcp/vigil/redisshare"
)

// Flags are vigil's -connect-*: the gateway as an OAuth client of its
// own identity provider (-auth-issuer), where a user's browser signs in
// before authorizing an upstream of the user mode, and the bounds of the
// flows under way.
type Flags struct {
	ClientID, Secret            string
	secretRef                   string
	MaxPending, MaxPendingOfOne int
}

// Register adds the flags to fs.
func (fl *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&fl.ClientID, "connect-client-id", "", "the gateway's client `ID` at -auth-issuer, where a user signs in before authorizing an upstream of -upstream-auth NAME=user (its redirect URI: the gateway's URL + /connect/signin)")
	fs.StringVar(&fl.secretRef, "connect-client-secret", "", "that client's secret, `@FILE` or env:VAR (never the secret itself)")
	fs.IntVar(&fl.MaxPending, "connect-max-pending", 0, "most authorizations of upstreams under way (links made and not yet completed or expired, 10 minutes each), in all, over every replica with -redis (0: 10000); of one user at most 16, its oldest forgotten first; beyond, a call that needs one is answered -32000 until one ends")
}

// Resolve reads the secret with getenv and checks the flags against the
// user-mode upstreams (users: how many) and -auth-issuer.
func (fl *Flags) Resolve(getenv func(string) string, users int, issuer string) error {
	switch {
	case users == 0 && (fl.ClientID != "" || fl.secretRef != ""):
		return errors.New("-connect-client-id, -connect-client-secret: need an -upstream-auth NAME=user")
	case users == 0:
		return nil
	case issuer == "":
		return errors.New("-upstream-auth NAME=user needs -auth-issuer: a user signs in there before authorizing the upstream")
	case fl.ClientID == "" || fl.secretRef == "":
		return errors.New("-upstream-auth NAME=user needs -connect-client-id and -connect-client-secret (@FILE or env:VAR)")
	case !strings.HasPrefix(fl.secretRef, "@") && !strings.HasPrefix(fl.secretRef, "env:"):
		return errors.New("-connect-client-secret: give @FILE or env:VAR, not the secret itself (a command line is visible to every local user)")
	case fl.MaxPending < 0:
		return fmt.Errorf("-connect-max-pending %d: want 0 (the default) or more", fl.MaxPending)
	}
	var err error
	if fl.Secret, err = flagvalue.Secret(fl.secretRef, getenv); err != nil {
		return fmt.Errorf("-connect-client-secret: %w", err)
	}
	return nil
}

// Config returns the Connector's configuration of fl: the browser signs
// in at issuer; the tokens and the flows under way are kept on shared's
// Redis (-redis: every replica serves them, and a link made on one opens
// on any), else in memory (one replica).
func (fl *Flags) Config(issuer string, shared *redisshare.Shared, registry prometheus.Registerer, logger *slog.Logger) Config {
	cfg := Config{
		SignInIssuer: issuer, SignInClientID: fl.ClientID, SignInSecret: fl.Secret, MaxPending: fl.MaxPending,
		Store: accounts.NewMemoryStore(0), Registerer: registry, Logger: logger,
	}
	if shared != nil {
		cfg.Store, cfg.Flows = shared.AccountStore(), shared.FlowStore()
	}
	return cfg
}
