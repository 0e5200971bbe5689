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
// resource; its first authorization_servers entry. Metadata whose
// resource is not resourceURL is refused, naming both (RFC 9728 sections
// 3.3 and 5: its data must not be used, or the gateway's client secret
// would go to the authorization server another resource names).
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
	if !sameResource(prm.Resource, resourceURL) {
		return "", fmt.Errorf("the protected resource metadata at %s names the resource %q, not %s, the upstream's URL: "+
			"RFC 9728 (section 3.3) forbids using it; fix the upstream's metadata, or give its issuer=", where, prm.Resource, resourceURL)
	}
	if len(prm.Servers) == 0 {
		return "", errors.New("protected resource metadata names no authorization server")
	}
	return prm.Servers[0], nil
}

// sameResource reports whether the metadata's resource is want, the URL
// it was asked for: identical, but for the "/" an empty path means.
func sameResource(got, want string) bool {
	if got == want {
		return true
	}
	g, err1 := url.Parse(got)
	w, err2 := url.Parse(want)
	if err1 != nil || err2 != nil || g.Path != "" && g.Path != "/" || w.Path != "" && w.Path != "/" {
		return false
	}
	g.Path, w.Path = "/", "/"
	return g.String() == w.String()
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
