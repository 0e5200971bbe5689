package oauth_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
)

// fakeVerifier maps tokens to principals or errors; any other token is
// invalid, a malformed one first (as the real verifiers check, with
// oauth.CheckTokenSyntax). It counts its calls.
type fakeVerifier struct {
	principals map[string]*auth.Principal
	errs       map[string]error
	calls      atomic.Int64
}

func (v *fakeVerifier) Verify(_ context.Context, token string) (*auth.Principal, error) {
	v.calls.Add(1)
	if p, ok := v.principals[token]; ok {
		return p, nil
	}
	if err, ok := v.errs[token]; ok {
		return nil, err
	}
	if err := oauth.CheckTokenSyntax(token); err != nil {
		return nil, err
	}
	return nil, &oauth.Error{Reason: oauth.ReasonInvalidToken, Description: "unknown token"}
}

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
