package connect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/vigil-mcp/vigil/internal/asmeta"
	"github.com/vigil-mcp/vigil/internal/wwwauth"
)

// discoverIssuer finds the authorization server of the protected
// resource at resourceURL as an MCP client does: the resource_metadata of
// its 401's WWW-Authenticate, else the RFC 9728 well-known URI of the
// resource; its first authorization_servers entry.
func discoverIssuer(ctx context.Context, client *http.Client, resourceURL string) (string, error) {
	where := ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, resourceURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, asmeta.MaxBody))
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			if _, params, err := wwwauth.Parse(resp.Header.Get("WWW-Authenticate")); err == nil {
				where = params["resource_metadata"]
			}
		}
	}
	if where == "" {
		u, err := url.Parse(resourceURL)
		if err != nil {
			return "", err
		}
		where = u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	}
	var prm struct {
		Resource string   `json:"resource"`
		Servers  []string `json:"authorization_servers"`
	}
	if err := asmeta.GetJSON(ctx, client, where, &prm); err != nil {
		return "", fmt.Errorf("protected resource metadata: %w", err)
	}
	if len(prm.Servers) == 0 {
		return "", errors.New("protected resource metadata names no authorization server")
	}
	return prm.Servers[0], nil
}

// discoverServer reads issuer's RFC 8414 metadata (its OpenID Connect
// discovery document when it has none), which must name issuer itself,
// its authorization and token endpoints, and offer PKCE S256.
func discoverServer(ctx context.Context, client *http.Client, issuer string) (*asmeta.Server, error) {
	md, err := asmeta.Discover(ctx, client, issuer)
	switch {
	case err != nil:
		return nil, fmt.Errorf("authorization server metadata of %s: %w", issuer, err)
	case md.AuthorizationEndpoint == "" || md.TokenEndpoint == "":
		return nil, fmt.Errorf("the metadata of %s has no authorization or token endpoint", issuer)
	case !slices.Contains(md.CodeChallengeMethodsSupported, "S256"):
		return nil, fmt.Errorf("%s does not offer PKCE S256 (code_challenge_methods_supported)", issuer)
	}
	return md, nil
}
