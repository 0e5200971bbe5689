package accounts_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/accounts"
)

// TestTokensPrintRedacted: an entry and a token print, log and marshal
// redacted, whatever the verb or handler.
func TestTokensPrintRedacted(t *testing.T) {
	const at, rt = "at-SECRET-access", "rt-SECRET-refresh"
	for _, v := range []any{accounts.NewSecretEntry(at, rt), accounts.NewSecret(at)} {
		var out bytes.Buffer
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%10.3s"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
		fmt.Fprintln(&out, v)
		j, err := json.Marshal(v)
		require.NoError(t, err)
		out.Write(j)
		for _, h := range []slog.Handler{
			slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}),
			slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}),
		} {
			slog.New(h).Debug("x", "v", v)
		}
		assert.NotContains(t, out.String(), "SECRET", "%s", out.String())
	}
}

// TestTokensNeverShow: through a whole life (save, refresh, a refresh
// the AS fails with the token in its description, a refused one, a
// disconnection whose revocation fails), no token the AS issued appears
// in the vault's logs at debug level, its errors, or its metrics.
func TestTokensNeverShow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(600)
		var logs bytes.Buffer
		reg := prometheus.NewRegistry()
		v, err := accounts.NewVault(accounts.VaultConfig{
			Store: accounts.NewMemoryStore(0), Clients: map[string]accounts.Client{testUpstream: as.client("http://as.test")},
			Registerer: reg, HTTPClient: as.inProcess(),
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		require.NoError(t, err)
		ctx := t.Context()
		var errs []string
		note := func(err error) {
			if err != nil {
				errs = append(errs, err.Error())
			}
		}
		for _, p := range []string{"alice", "bob"} {
			note(v.Save(ctx, p, testUpstream, as.authorize()))
		}
		time.Sleep(11 * time.Minute)
		_, err = v.Token(ctx, "alice", testUpstream) // refreshed
		note(err)
		as.mu.Lock()
		as.status = http.StatusServiceUnavailable
		as.mu.Unlock()
		_, err = v.Token(ctx, "bob", testUpstream) // 503 "cannot refresh <token>"
		require.Error(t, err)
		note(err)
		as.mu.Lock()
		as.status = 0
		clear(as.refresh)
		as.mu.Unlock()
		_, err = v.Token(ctx, "bob", testUpstream) // invalid_grant "refresh token <token> is not valid"
		require.ErrorIs(t, err, accounts.ErrAuthorize)
		note(err)
		note(v.Save(ctx, "carol", testUpstream, as.authorize()))
		as.mu.Lock()
		as.status = http.StatusServiceUnavailable
		as.mu.Unlock()
		conns, err := v.Connections(ctx, "carol")
		note(err)
		note(v.Disconnect(ctx, "alice", testUpstream))

		var metrics bytes.Buffer
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			require.NoError(t, expfmt.NewEncoder(&metrics, expfmt.NewFormat(expfmt.TypeTextPlain)).Encode(f))
		}
		seen := logs.String() + strings.Join(errs, "\n") + metrics.String() + fmt.Sprintf("%+v", conns)
		require.NotEmpty(t, logs.String())
		as.mu.Lock()
		defer as.mu.Unlock()
		require.Len(t, as.issued, 8, "4 saved, 1 refresh")
		for _, tok := range as.issued {
			assert.NotContains(t, seen, tok)
		}
	})
}
