package accounts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// revokeBudget bounds the revocation requests of one Disconnect.
const revokeBudget = 10 * time.Second

// Revocation outcomes, the label of the revocations' metric.
const (
	revokeOK      = "revoked"
	revokeRefresh = "refresh_only" // the refresh token revoked; the access token lives until it expires
	revokeFailed  = "failed"
)

// AccessTokenLivesError is the error of a [Vault.Disconnect] that
// revoked the refresh token (and with it the grant's refreshes) but not
// the access token, of a kind the authorization server revokes none of
// (RFC 7009 unsupported_token_type, as for a JWT): the entry is gone, and
// the last access token lives until Expiry (zero: unknown).
type AccessTokenLivesError struct {
	Upstream string
	Expiry   time.Time
}

func (e *AccessTokenLivesError) Error() string {
	until := "until it expires"
	if !e.Expiry.IsZero() {
		until = "until " + e.Expiry.UTC().Format(time.RFC3339)
	}
	return "accounts: " + e.Upstream + ": the connection is removed and its refresh token revoked; the authorization server revokes " +
		"no access token of this kind (unsupported_token_type), so the last one lives " + until
}

// revoke revokes e's tokens at c's revocation endpoint (RFC 7009): the
// refresh token first, which revokes the grant's access tokens at most
// servers, then the access token.
func (v *Vault) revoke(ctx context.Context, upstream string, c *Client, e *entry) error {
	ctx, cancel := context.WithTimeout(ctx, revokeBudget)
	defer cancel()
	var errs []error
	grantRevoked := false
	if e.refresh != "" {
		err := v.revokeOne(ctx, c, e.refresh, "refresh_token")
		grantRevoked = err == nil
		errs = append(errs, err)
	}
	accessLives := false
	if err := v.revokeOne(ctx, c, e.access, "access_token"); grantRevoked && errors.Is(err, errUnsupportedTokenType) {
		// A server that revokes no access tokens of this kind (a JWT
		// lives until it expires) has revoked the grant with its
		// refresh token: that is the revocation it offers, which is
		// said as it is.
		accessLives = true
	} else {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		v.metrics.revoked(upstream, revokeFailed)
		v.logger.Warn("accounts: a revocation failed: the connection is removed, its tokens may live until they expire", "upstream", upstream, "error", err)
		return fmt.Errorf("accounts: %s: the connection is removed, but its revocation failed: %w", upstream, err)
	}
	if accessLives {
		v.metrics.revoked(upstream, revokeRefresh)
		return &AccessTokenLivesError{Upstream: upstream, Expiry: e.expiry}
	}
	v.metrics.revoked(upstream, revokeOK)
	return nil
}

// revokeOne posts one token's revocation with the client's
// authentication. The server answers 200 whether it knew the token or
// not.
func (v *Vault) revokeOne(ctx context.Context, c *Client, tok secret, hint string) error {
	form := url.Values{"token": {string(tok)}, "token_type_hint": {hint}}
	inHeader := c.AuthStyle != oauth2.AuthStyleInParams && c.ClientSecret != ""
	if !inHeader {
		form.Set("client_id", c.ClientID)
		if c.ClientSecret != "" {
			form.Set("client_secret", c.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.RevocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return errors.New("the revocation endpoint is not a URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if inHeader {
		// RFC 6749 2.3.1: the id and secret form-encoded, then Basic.
		req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	}
	resp, err := v.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL's request
		}
		return fmt.Errorf("%s: %w", hint, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var answer struct {
		Error string `json:"error"`
	}
	if resp.StatusCode == http.StatusBadRequest && json.Unmarshal(body, &answer) == nil && answer.Error == "unsupported_token_type" {
		return fmt.Errorf("%s: %w", hint, errUnsupportedTokenType)
	}
	return fmt.Errorf("%s: the revocation endpoint answered %d", hint, resp.StatusCode)
}

// errUnsupportedTokenType is RFC 7009's unsupported_token_type: the
// server revokes no tokens of that type.
var errUnsupportedTokenType = errors.New("the revocation endpoint revokes no tokens of this type (unsupported_token_type)")
