package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"
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

// The vault's timing and bounds.
const (
	// defaultMaxPerPrincipal is MaxPerPrincipal's default.
	defaultMaxPerPrincipal = 8
	// refreshMargin is the least time before expiry a token is refreshed
	// at; a tenth of its lifetime when that is longer (at most half).
	refreshMargin = time.Minute
	// refreshBudget bounds one refresh at the authorization server.
	refreshBudget = 30 * time.Second
	// lockTTL is the refresh lease's: a replica that dies holding it
	// holds up the others that long at most.
	lockTTL = refreshBudget + 5*time.Second
	// waitBudget bounds how long Token waits for another replica's
	// refresh of an expired token before it gives up (a transient error).
	waitBudget = 10 * time.Second
	// pollInterval is how often a waiting Token looks at the Store.
	pollInterval = 50 * time.Millisecond
	// entryTTL is how long the Store keeps an entry that is not
	// refreshed (or saved) again; one without a refresh token lives
	// until its access token expires.
	entryTTL = 30 * 24 * time.Hour
	// saveAttempts bounds the compare-and-set rounds of a Save.
	saveAttempts = 4
)

// Vault keeps each principal's tokens per upstream. Its methods are safe
// for concurrent use.
type Vault struct {
	store   Store
	clients map[string]Client
	logger  *slog.Logger
	metrics *metrics // nil: none
	max     int
	now     func() time.Time
	http    *http.Client
	flight  singleflight.Group // one refresh at a time per entry in the process
}

// NewVault returns the vault of cfg, with its metrics registered.
func NewVault(cfg VaultConfig) (*Vault, error) {
	if cfg.Store == nil {
		return nil, errors.New("accounts: no Store")
	}
	v := &Vault{
		store: cfg.Store, clients: make(map[string]Client, len(cfg.Clients)), logger: cfg.Logger,
		max: cfg.MaxPerPrincipal, now: cfg.Now, http: cfg.HTTPClient,
	}
	for name, c := range cfg.Clients {
		if name == "" || c.TokenURL == "" || c.ClientID == "" {
			return nil, fmt.Errorf("accounts: upstream %q needs a name, a token endpoint and a client id", name)
		}
		v.clients[name] = c
	}
	if v.logger == nil {
		v.logger = slog.New(slog.DiscardHandler)
	}
	if v.max < 1 {
		v.max = defaultMaxPerPrincipal
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.http == nil {
		v.http = http.DefaultClient
	}
	if cfg.Registerer != nil {
		var err error
		if v.metrics, err = newMetrics(cfg.Registerer, slices.Sorted(maps.Keys(v.clients))); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// client returns the Client of upstream, checking principal's bounds.
func (v *Vault) client(principal, upstream string) (*Client, error) {
	if principal == "" || len(principal) > MaxPrincipalBytes {
		return nil, fmt.Errorf("accounts: a principal must have 1 to %d bytes", MaxPrincipalBytes)
	}
	c, ok := v.clients[upstream]
	if !ok {
		return nil, errors.New("accounts: not an upstream of the vault")
	}
	return &c, nil
}

// load returns the entry of (principal, upstream) and its version; an
// error wrapping ErrAuthorize when there is none.
func (v *Vault) load(ctx context.Context, principal, upstream string) (*entry, uint64, error) {
	data, version, err := v.store.Get(ctx, principal, upstream)
	if err != nil {
		return nil, 0, fmt.Errorf("accounts: reading the vault: %w", err)
	}
	if data == nil {
		return nil, 0, fmt.Errorf("accounts: no connection to %s: %w", upstream, ErrAuthorize)
	}
	e, err := decode(data)
	if err != nil {
		return nil, 0, err
	}
	return e, version, nil
}

// due reports whether e is to be refreshed at now: it expires within its
// margin.
func due(e *entry, now time.Time) bool {
	if e.expiry.IsZero() {
		return false
	}
	life := e.expiry.Sub(e.issued)
	margin := min(max(refreshMargin, life/10), life/2)
	return !now.Before(e.expiry.Add(-margin))
}

// Token returns a valid access token of principal at upstream, refreshed
// first when it expires soon. An error wrapping [ErrAuthorize] means the
// principal must authorize again (the entry is gone); another error is
// transient (the authorization server or the Store failed) and keeps the
// entry. Concurrent calls for one entry, on any replica sharing the
// Store, refresh it once; a call that finds another replica refreshing
// an expired token waits for it (10 s at most).
func (v *Vault) Token(ctx context.Context, principal, upstream string) (string, error) {
	c, err := v.client(principal, upstream)
	if err != nil {
		return "", err
	}
	e, _, err := v.load(ctx, principal, upstream)
	if err != nil {
		return "", err
	}
	if !due(e, v.now()) {
		return string(e.access), nil
	}
	key := principal + "\x00" + upstream
	ch := v.flight.DoChan(key, func() (any, error) {
		// Detached from the first caller, whose cancel must not fail
		// the others waiting on it; bounded by its own budget.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitBudget+refreshBudget)
		defer cancel()
		return v.refreshShared(rctx, principal, upstream, c, "")
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return string(r.Val.(secret)), nil
	case <-ctx.Done():
		return "", fmt.Errorf("accounts: token of %s: %w", upstream, context.Cause(ctx))
	}
}

// Renew refreshes principal's token of upstream now, whatever its
// expiry, when it is still refused, the access token an upstream refused
// (it answered HTTP 401: the user revoked the grant, say; "": the one the
// entry holds now), and returns the new access token; when another call
// renewed it already, the entry's. An error wrapping [ErrAuthorize] means
// the principal must authorize again (the entry is gone: the refresh was
// refused, or there is no refresh token); another is transient, and a
// refused token is never returned. Concurrent renewals of one entry
// refresh it once.
func (v *Vault) Renew(ctx context.Context, principal, upstream, refused string) (string, error) {
	c, err := v.client(principal, upstream)
	if err != nil {
		return "", err
	}
	if refused == "" {
		e, _, err := v.load(ctx, principal, upstream)
		if err != nil {
			return "", err
		}
		refused = string(e.access)
	}
	key := principal + "\x00" + upstream
	ch := v.flight.DoChan(key+"\x00renew", func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitBudget+refreshBudget)
		defer cancel()
		return v.refreshShared(rctx, principal, upstream, c, secret(refused))
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return string(r.Val.(secret)), nil
	case <-ctx.Done():
		return "", fmt.Errorf("accounts: renewing the token of %s: %w", upstream, context.Cause(ctx))
	}
}

// Forget removes principal's entry of upstream without revoking its
// tokens: an upstream refused even its renewed token, and the principal
// authorizes again. No entry is no error.
func (v *Vault) Forget(ctx context.Context, principal, upstream string) error {
	if _, err := v.client(principal, upstream); err != nil {
		return err
	}
	deleted, err := v.store.Delete(ctx, principal, upstream, 0)
	if err != nil {
		return fmt.Errorf("accounts: deleting from the vault: %w", err)
	}
	if deleted {
		v.metrics.held(upstream, -1)
		v.logger.Info("accounts: a connection is void: its user authorizes again", "upstream", upstream, "reason", "refused")
	}
	return nil
}

// refreshShared returns the access token of (principal, upstream), after
// refreshing it under the Store's lease, or after another replica did:
// when it is due, or, refused not empty, while it is refused (the access
// token an upstream refused).
func (v *Vault) refreshShared(ctx context.Context, principal, upstream string, c *Client, refused secret) (secret, error) {
	stale := func(e *entry, now time.Time) bool { return due(e, now) || refused != "" && e.access == refused }
	deadline := v.now().Add(waitBudget)
	for {
		e, _, err := v.load(ctx, principal, upstream)
		if err != nil {
			return "", err
		}
		now := v.now()
		if !stale(e, now) {
			return e.access, nil
		}
		lease, ok, err := v.store.TryLock(ctx, principal, upstream, lockTTL)
		if err != nil {
			return "", fmt.Errorf("accounts: locking the entry: %w", err)
		}
		if ok {
			defer func() {
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				defer cancel()
				if err := v.store.Unlock(uctx, principal, upstream, lease); err != nil {
					v.logger.Warn("accounts: cannot release a refresh lease: the others wait until it expires", "upstream", upstream, "error", err)
				}
			}()
			// Read again under the lease: another replica may have
			// refreshed between the first read and the lease.
			e, version, err := v.load(ctx, principal, upstream)
			if err != nil {
				return "", err
			}
			if !stale(e, v.now()) {
				return e.access, nil
			}
			return v.refresh(ctx, principal, upstream, c, e, version, refused != "")
		}
		// Another replica refreshes: a token still valid serves
		// meanwhile, an expired or refused one waits for the refresh.
		if now.Before(e.expiry) && refused == "" {
			return e.access, nil
		}
		if !now.Before(deadline) {
			return "", fmt.Errorf("accounts: another replica's refresh of %s did not end in %s", upstream, waitBudget)
		}
		t := time.NewTimer(pollInterval)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("accounts: waiting for a refresh of %s: %w", upstream, context.Cause(ctx))
		}
	}
}

// forget deletes the entry at version (the refresh found it void) and
// returns the ErrAuthorize that tells why, counted under reason; unless a
// newer authorization replaced the entry meanwhile: its token then.
func (v *Vault) forget(ctx context.Context, principal, upstream string, version uint64, reason, why string) (secret, error) {
	v.metrics.failed(upstream, reason)
	deleted, err := v.store.Delete(ctx, principal, upstream, version)
	switch {
	case err != nil:
		v.logger.Warn("accounts: cannot delete a void entry", "upstream", upstream, "error", err)
	case deleted:
		v.metrics.held(upstream, -1)
	default:
		if e, _, err := v.load(ctx, principal, upstream); err == nil && !due(e, v.now()) {
			return e.access, nil
		}
	}
	v.logger.Info("accounts: a connection is void: its user authorizes again", "upstream", upstream, "reason", reason)
	return "", fmt.Errorf("accounts: %s %s: %w", upstream, why, ErrAuthorize)
}

// Save stores tok, the tokens of principal's authorization of upstream
// (a code exchanged at its Client's token endpoint), replacing any
// earlier entry. It refuses an upstream not in Clients, a principal
// empty or over MaxPrincipalBytes, a token without an access token or
// over the vault's bounds, and a new connection when the principal holds
// MaxPerPrincipal already.
func (v *Vault) Save(ctx context.Context, principal, upstream string, tok *oauth2.Token) error {
	c, err := v.client(principal, upstream)
	if err != nil {
		return err
	}
	if tok == nil || tok.AccessToken == "" {
		return errors.New("accounts: no access token to save")
	}
	now := v.now()
	e := fromToken(tok, c, now)
	if err := e.check(); err != nil {
		return err
	}
	data := e.encode()
	for range saveAttempts {
		_, version, err := v.store.Get(ctx, principal, upstream)
		if err != nil {
			return fmt.Errorf("accounts: reading the vault: %w", err)
		}
		stored, err := v.store.Put(ctx, principal, upstream, data, version, v.max, e.ttl(now))
		if err != nil {
			return fmt.Errorf("accounts: writing the vault: %w", err)
		}
		if stored {
			if version == 0 {
				v.metrics.held(upstream, 1)
			}
			return nil
		}
		if version == 0 {
			if _, again, err := v.store.Get(ctx, principal, upstream); err == nil && again == 0 {
				return fmt.Errorf("accounts: the principal holds %d connections already: disconnect one first", v.max)
			}
		}
	}
	return errors.New("accounts: the entry kept changing while it was saved")
}

// expiry returns when tok expires, counted from now when the
// authorization server said in how long (expires_in).
func expiry(tok *oauth2.Token, now time.Time) time.Time {
	if tok.ExpiresIn > 0 {
		return now.Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return tok.Expiry
}

// ttl returns how long the Store keeps e, saved at now.
func (e *entry) ttl(now time.Time) time.Duration {
	if e.refresh == "" && !e.expiry.IsZero() {
		return max(e.expiry.Sub(now), time.Second)
	}
	return entryTTL
}

// Disconnect removes principal's entry of upstream and revokes its
// tokens at the authorization server (RFC 7009: the refresh token, then
// the access token) when its Client has a RevocationURL. The entry is
// gone even when the revocation fails, which the error then says; one
// that revoked the refresh token only is an [*AccessTokenLivesError]. No
// entry is no error.
func (v *Vault) Disconnect(ctx context.Context, principal, upstream string) error {
	c, err := v.client(principal, upstream)
	if err != nil {
		return err
	}
	data, _, err := v.store.Get(ctx, principal, upstream)
	if err != nil {
		return fmt.Errorf("accounts: reading the vault: %w", err)
	}
	deleted, err := v.store.Delete(ctx, principal, upstream, 0)
	if err != nil {
		return fmt.Errorf("accounts: deleting from the vault: %w", err)
	}
	if deleted {
		v.metrics.held(upstream, -1)
	}
	if data == nil || c.RevocationURL == "" {
		return nil
	}
	e, err := decode(data)
	if err != nil {
		return err
	}
	return v.revoke(ctx, upstream, c, e)
}

// Connections returns principal's connections, by upstream name.
func (v *Vault) Connections(ctx context.Context, principal string) ([]Connection, error) {
	if principal == "" || len(principal) > MaxPrincipalBytes {
		return nil, fmt.Errorf("accounts: a principal must have 1 to %d bytes", MaxPrincipalBytes)
	}
	all, err := v.store.List(ctx, principal)
	if err != nil {
		return nil, fmt.Errorf("accounts: reading the vault: %w", err)
	}
	conns := make([]Connection, 0, len(all))
	for _, upstream := range slices.Sorted(maps.Keys(all)) {
		e, err := decode(all[upstream])
		if err != nil {
			continue
		}
		conns = append(conns, Connection{Upstream: upstream, Scopes: e.scopes, Expiry: e.expiry, Obtained: e.obtained})
	}
	return conns, nil
}
