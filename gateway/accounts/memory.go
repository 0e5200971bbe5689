package accounts

import (
	"context"
	"time"
)

// MemoryStore is a [Store] in the process, for one replica: the entries
// are lost when it ends. It holds at most its bound of entries in all
// (expired ones are dropped first). Its methods are safe for concurrent
// use.
type MemoryStore struct {
	max int
}

// NewMemoryStore returns a MemoryStore of at most maxEntries entries in
// all (1024 when below 1).
func NewMemoryStore(maxEntries int) *MemoryStore {
	return &MemoryStore{max: maxEntries}
}

var _ Store = (*MemoryStore)(nil)

// Get implements [Store].
func (m *MemoryStore) Get(ctx context.Context, principal, upstream string) ([]byte, uint64, error) {
	return nil, 0, errNotYet
}

// Put implements [Store].
func (m *MemoryStore) Put(ctx context.Context, principal, upstream string, data []byte, version uint64, limit int, ttl time.Duration) (bool, error) {
	return false, errNotYet
}

// Delete implements [Store].
func (m *MemoryStore) Delete(ctx context.Context, principal, upstream string, version uint64) (bool, error) {
	return false, errNotYet
}

// List implements [Store].
func (m *MemoryStore) List(ctx context.Context, principal string) (map[string][]byte, error) {
	return nil, errNotYet
}

// TryLock implements [Store].
func (m *MemoryStore) TryLock(ctx context.Context, principal, upstream string, ttl time.Duration) (string, bool, error) {
	return "", false, errNotYet
}

// Unlock implements [Store].
func (m *MemoryStore) Unlock(ctx context.Context, principal, upstream, token string) error {
	return errNotYet
}
