package accounts

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"time"
)

// MemoryStore is a [Store] in the process, for one replica: the entries
// are lost when it ends. It holds at most its bound of entries in all,
// dropping expired ones first, and as many refresh leases. Its methods
// are safe for concurrent use.
type MemoryStore struct {
	max int

	mu      sync.Mutex
	entries map[memKey]*memEntry
	count   map[string]int // principal → its entries
	leases  map[memKey]memLease
}

type memKey struct{ principal, upstream string }

type memEntry struct {
	data    []byte
	version uint64
	expires time.Time
}

type memLease struct {
	token   string
	expires time.Time
}

// defaultMemoryEntries is NewMemoryStore's bound by default.
const defaultMemoryEntries = 1 << 14

// NewMemoryStore returns a MemoryStore of at most maxEntries entries in
// all (16384 when below 1).
func NewMemoryStore(maxEntries int) *MemoryStore {
	if maxEntries < 1 {
		maxEntries = defaultMemoryEntries
	}
	return &MemoryStore{max: maxEntries, entries: make(map[memKey]*memEntry), count: make(map[string]int), leases: make(map[memKey]memLease)}
}

var _ Store = (*MemoryStore)(nil)

// errMemoryFull is a new entry past the store's bound.
var errMemoryFull = errors.New("accounts: the vault's memory store is full")

// live returns the entry of k unless it expired (which it drops); m.mu held.
func (m *MemoryStore) live(k memKey, now time.Time) *memEntry {
	e, ok := m.entries[k]
	if !ok {
		return nil
	}
	if !now.Before(e.expires) {
		m.drop(k)
		return nil
	}
	return e
}

// drop removes the entry of k; m.mu held.
func (m *MemoryStore) drop(k memKey) {
	if _, ok := m.entries[k]; !ok {
		return
	}
	delete(m.entries, k)
	if m.count[k.principal]--; m.count[k.principal] <= 0 {
		delete(m.count, k.principal)
	}
}

// Get implements [Store].
func (m *MemoryStore) Get(_ context.Context, principal, upstream string) ([]byte, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.live(memKey{principal, upstream}, time.Now())
	if e == nil {
		return nil, 0, nil
	}
	return e.data, e.version, nil
}

// Put implements [Store].
func (m *MemoryStore) Put(_ context.Context, principal, upstream string, data []byte, version uint64, limit int, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	k := memKey{principal, upstream}
	e := m.live(k, now)
	switch {
	case e != nil && e.version != version, e == nil && version != 0:
		return false, nil
	case e == nil:
		if m.count[principal] >= limit {
			m.sweep(now)
			if m.count[principal] >= limit {
				return false, nil
			}
		}
		if len(m.entries) >= m.max {
			m.sweep(now)
			if len(m.entries) >= m.max {
				return false, errMemoryFull
			}
		}
		e = &memEntry{}
		m.entries[k] = e
		m.count[principal]++
	}
	e.data, e.version, e.expires = data, version+1, now.Add(ttl)
	return true, nil
}

// sweep drops the expired entries and leases; m.mu held.
func (m *MemoryStore) sweep(now time.Time) {
	for k := range m.entries {
		m.live(k, now)
	}
	for k, l := range m.leases {
		if !now.Before(l.expires) {
			delete(m.leases, k)
		}
	}
}

// Delete implements [Store].
func (m *MemoryStore) Delete(_ context.Context, principal, upstream string, version uint64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{principal, upstream}
	e := m.live(k, time.Now())
	if e == nil || version != 0 && e.version != version {
		return false, nil
	}
	m.drop(k)
	return true, nil
}

// List implements [Store].
func (m *MemoryStore) List(_ context.Context, principal string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]byte)
	if m.count[principal] == 0 {
		return out, nil
	}
	now := time.Now()
	for k := range m.entries {
		if k.principal == principal {
			if e := m.live(k, now); e != nil {
				out[k.upstream] = e.data
			}
		}
	}
	return out, nil
}

// TryLock implements [Store].
func (m *MemoryStore) TryLock(_ context.Context, principal, upstream string, ttl time.Duration) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	k := memKey{principal, upstream}
	if l, ok := m.leases[k]; ok && now.Before(l.expires) {
		return "", false, nil
	}
	if len(m.leases) >= m.max {
		m.sweep(now)
		if len(m.leases) >= m.max {
			return "", false, errMemoryFull
		}
	}
	token := rand.Text()
	m.leases[k] = memLease{token: token, expires: now.Add(ttl)}
	return token, true, nil
}

// Unlock implements [Store].
func (m *MemoryStore) Unlock(_ context.Context, principal, upstream, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{principal, upstream}
	if l, ok := m.leases[k]; ok && l.token == token {
		delete(m.leases, k)
	}
	return nil
}
