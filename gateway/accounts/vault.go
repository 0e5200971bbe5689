package accounts

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"
)

// ErrAuthorize is wrapped by the errors that mean the principal must
// authorize the upstream again: no entry, an expired one without a
// refresh token, or a refresh the authorization server refused
// (invalid_grant). The entry is gone when it is returned.
var ErrAuthorize = errors.New("authorize the upstream again")

// Client is what the vault needs to refresh and revoke the tokens of one
// upstream at its authorization server: the operator's configuration of
// the gateway as an OAuth client there.
type Client struct {
	// TokenURL is the authorization server's token endpoint.
	TokenURL string
	// RevocationURL is its RFC 7009 revocation endpoint; "" when it has
	// none (Disconnect then only forgets the tokens).
	RevocationURL string
	// ClientID and ClientSecret identify the gateway there; the secret
	// may be "" for a public client.
	ClientID, ClientSecret string
	// Resource is the upstream's RFC 8707 resource indicator, sent with
	// each refresh; "" for none.
	Resource string
	// Scopes are the scopes asked at authorization.
	Scopes []string
	// AuthStyle is how the client authenticates at the token and
	// revocation endpoints (oauth2.AuthStyleInHeader: HTTP Basic;
	// AuthStyleInParams: in the form; AuthStyleAutoDetect: try both).
	AuthStyle oauth2.AuthStyle
}

// VaultConfig configures [NewVault].
type VaultConfig struct {
	// Store persists the entries: [NewMemoryStore] for one replica,
	// redisshare's AccountStore for all of them. Required.
	Store Store
	// Clients are the upstreams whose tokens the vault keeps, by upstream
	// name, each with its client configuration. The vault refuses any
	// other upstream name, so the names a caller can reach are bounded.
	Clients map[string]Client
	// Logger gets the vault's messages, which never hold a token; nil
	// discards them.
	Logger *slog.Logger
	// Registerer, if not nil, gets the vault's metrics, labeled by
	// upstream (the names of Clients).
	Registerer prometheus.Registerer
	// MaxPerPrincipal bounds the connections of one principal (8 when
	// below 1); Save refuses one more.
	MaxPerPrincipal int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// HTTPClient makes the requests to the authorization servers
	// (http.DefaultClient when nil); give it a timeout.
	HTTPClient *http.Client
}

// Connection is what [Vault.Connections] tells of one connection: never
// a token.
type Connection struct {
	// Upstream is the upstream's name.
	Upstream string
	// Scopes are the scopes granted, when the authorization server said.
	Scopes []string
	// Expiry is when the access token expires (zero: unknown).
	Expiry time.Time
	// Obtained is when the principal authorized the upstream.
	Obtained time.Time
}

// MaxPrincipalBytes is the longest principal the vault accepts.
const MaxPrincipalBytes = 512

// Vault keeps each principal's tokens per upstream. Its methods are safe
// for concurrent use.
type Vault struct {
	cfg VaultConfig
}

// NewVault returns the vault of cfg, with its metrics registered.
func NewVault(cfg VaultConfig) (*Vault, error) {
	if cfg.Store == nil {
		return nil, errors.New("accounts: no Store")
	}
	return &Vault{cfg: cfg}, nil
}

var errNotYet = errors.New("accounts: not implemented yet")

// Token returns a valid access token of principal at upstream, refreshed
// first when it expires soon. An error wrapping [ErrAuthorize] means the
// principal must authorize again (the entry is gone); another error is
// transient (the authorization server or the Store failed) and keeps the
// entry. Concurrent calls for one entry, on any replica sharing the
// Store, refresh it once.
func (v *Vault) Token(ctx context.Context, principal, upstream string) (string, error) {
	return "", errNotYet
}

// Save stores tok, the tokens of principal's authorization of upstream
// (a code exchanged at its Client's token endpoint), replacing any
// earlier entry. It refuses an upstream not in Clients, a principal
// empty or over MaxPrincipalBytes, a token without an access token, and a
// new connection when the principal holds MaxPerPrincipal already.
func (v *Vault) Save(ctx context.Context, principal, upstream string, tok *oauth2.Token) error {
	return errNotYet
}

// Disconnect removes principal's entry of upstream and revokes its
// tokens at the authorization server (RFC 7009: the refresh token, then
// the access token) when its Client has a RevocationURL. The entry is
// gone even when the revocation fails, which the error then says. No
// entry is no error.
func (v *Vault) Disconnect(ctx context.Context, principal, upstream string) error {
	return errNotYet
}

// Connections returns principal's connections, by upstream name.
func (v *Vault) Connections(ctx context.Context, principal string) ([]Connection, error) {
	return nil, errNotYet
}
