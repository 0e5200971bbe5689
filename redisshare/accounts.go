package redisshare

import (
	"context"
	"errors"
	"time"
)

// AccountStore keeps the gateway's token vault (package gateway/accounts,
// whose Store it implements) on Redis, for every replica: each entry is
// sealed under the cluster key (AES-256-GCM, bound to its principal,
// upstream and version), and named by the pseudonym of its principal
// (an HMAC under the cluster key), so that Redis holds no token and no
// principal in clear. A rotation of the cluster key makes the entries
// unreachable: their users authorize again. Its methods are safe for
// concurrent use.
type AccountStore struct {
	s *Shared
}

// AccountStore returns the token vault's store on this replica's Redis.
func (s *Shared) AccountStore() *AccountStore { return &AccountStore{s: s} }

var errAccountsNotYet = errors.New("redisshare: accounts not implemented yet")

// Get returns the entry of (principal, upstream) and its version, or nil
// and 0 when there is none.
func (a *AccountStore) Get(ctx context.Context, principal, upstream string) ([]byte, uint64, error) {
	return nil, 0, errAccountsNotYet
}

// Put stores data as the entry of (principal, upstream) when its version
// is still version (0: none, and the principal holds fewer than limit
// entries), expiring after ttl; stored is false when it did not.
func (a *AccountStore) Put(ctx context.Context, principal, upstream string, data []byte, version uint64, limit int, ttl time.Duration) (bool, error) {
	return false, errAccountsNotYet
}

// Delete removes the entry of (principal, upstream) when its version is
// version (0: any), and reports whether it did.
func (a *AccountStore) Delete(ctx context.Context, principal, upstream string, version uint64) (bool, error) {
	return false, errAccountsNotYet
}

// List returns the entries of principal by upstream.
func (a *AccountStore) List(ctx context.Context, principal string) (map[string][]byte, error) {
	return nil, errAccountsNotYet
}

// TryLock takes the lease of (principal, upstream) for ttl unless
// another holds it.
func (a *AccountStore) TryLock(ctx context.Context, principal, upstream string, ttl time.Duration) (string, bool, error) {
	return "", false, errAccountsNotYet
}

// Unlock releases the lease of (principal, upstream) if token holds it.
func (a *AccountStore) Unlock(ctx context.Context, principal, upstream, token string) error {
	return errAccountsNotYet
}
