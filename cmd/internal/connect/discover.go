package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/vigil-mcp/vigil/internal/wwwauth"
)

// maxMetadataBytes bounds a metadata document the gateway reads.
const maxMetadataBytes = 64 << 10

// authServer is what the gateway uses of an authorization server's RFC 8414
// metadata.
type authServer struct {
	Issuer        string   `json:"issuer"`
	AuthURL       string   `json:"authorization_endpoint"`
	TokenURL      string   `json:"token_endpoint"`
	RevocationURL string   `json:"revocation_endpoint"`
	Challenges    []string `json:"code_challenge_methods_supported"`
	// IssParameter: the authorization response carries iss (RFC 9207),
	// which the callback then requires (mix-up defense).
	IssParameter bool `json:"authorization_response_iss_parameter_supported"`
}

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
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
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
	if err := getJSON(ctx, client, where, &prm); err != nil {
		return "", fmt.Errorf("protected resource metadata: %w", err)
	}
	if len(prm.Servers) == 0 {
		return "", errors.New("protected resource metadata names no authorization server")
	}
	return prm.Servers[0], nil
}

// discoverServer reads issuer's RFC 8414 metadata (its OpenID Connect
// discovery document when it has none), which must name issuer itself
// and offer PKCE S256.
func discoverServer(ctx context.Context, client *http.Client, issuer string) (*authServer, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("issuer %q is not a URL", issuer)
	}
	path := strings.TrimSuffix(u.Path, "/")
	var md authServer
	err = getJSON(ctx, client, u.Scheme+"://"+u.Host+"/.well-known/oauth-authorization-server"+path, &md)
	if err != nil {
		md = authServer{}
		if err2 := getJSON(ctx, client, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration", &md); err2 != nil {
			return nil, fmt.Errorf("authorization server metadata of %s: %w", issuer, err)
		}
	}
	switch {
	case md.Issuer != issuer:
		return nil, fmt.Errorf("the metadata of %s names the issuer %q", issuer, md.Issuer)
	case md.AuthURL == "" || md.TokenURL == "":
		return nil, fmt.Errorf("the metadata of %s has no authorization or token endpoint", issuer)
	case !slices.Contains(md.Challenges, "S256"):
		return nil, fmt.Errorf("%s does not offer PKCE S256 (code_challenge_methods_supported)", issuer)
	}
	return &md, nil
}

// getJSON decodes the JSON document at where into v, bounded.
func getJSON(ctx context.Context, client *http.Client, where string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered HTTP %d", where, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return err
	}
	if len(body) > maxMetadataBytes {
		return fmt.Errorf("%s: over %d bytes", where, maxMetadataBytes)
	}
	return json.Unmarshal(body, v)
}
