package accounts

import (
	"context"
	"time"
)

// Store persists the vault's entries, each an opaque sealed-or-not byte
// string under (principal, upstream) with a version that each successful
// Put increments, so that two replicas refreshing at once cannot lose a
// rotated refresh token. A Store must be safe for concurrent use; its
// methods deal in plain types only, so that a Store of another package
// (redisshare's, on Redis) needs nothing of this one. An error means the
// Store did not answer or held something it could not read: the vault
// treats it as transient.
type Store interface {
	// Get returns the entry of (principal, upstream) and its version
	// (at least 1), or a nil data and version 0 when there is none.
	Get(ctx context.Context, principal, upstream string) (data []byte, version uint64, err error)
	// Put stores data as the entry of (principal, upstream) when its
	// version is still version (0: when there is none, and then only if
	// the principal holds fewer than limit entries, limit > 0), with
	// version+1, expiring after ttl. stored is false when it did not:
	// the version moved, or the principal is full.
	Put(ctx context.Context, principal, upstream string, data []byte, version uint64, limit int, ttl time.Duration) (stored bool, err error)
	// Delete removes the entry of (principal, upstream) when its version
	// is version, or whatever its version when version is 0, and reports
	// whether it removed one.
	Delete(ctx context.Context, principal, upstream string, version uint64) (deleted bool, err error)
	// List returns the entries of principal by upstream.
	List(ctx context.Context, principal string) (map[string][]byte, error)
	// TryLock takes the lease of (principal, upstream) for ttl unless
	// someone holds it: ok is false then. token names this holding, for
	// Unlock.
	TryLock(ctx context.Context, principal, upstream string, ttl time.Duration) (token string, ok bool, err error)
	// Unlock releases the lease of (principal, upstream) if token still
	// holds it.
	Unlock(ctx context.Context, principal, upstream, token string) error
}
