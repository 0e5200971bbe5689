package redisshare

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/redisstore"
)

// AccountStore keeps the gateway's token vault (package gateway/accounts,
// whose Store it implements) on Redis, for every replica: each entry is
// sealed under the cluster key (AES-256-GCM, bound to its principal,
// upstream and version), and its keys are named by pseudonyms of its
// principal and upstream (HMACs under the cluster key), so that Redis
// holds no token, principal or upstream name in clear. A rotation of the
// cluster key makes the entries unreachable: their users authorize
// again. Its methods are safe for concurrent use.
type AccountStore struct {
	s *Shared
}

// AccountStore returns the token vault's store on this replica's Redis.
func (s *Shared) AccountStore() *AccountStore { return &AccountStore{s: s} }

// The vault's keys, all with the principal's pseudonym P as their hash
// tag (one slot on a Redis Cluster, for the scripts): {prefix}{P}, a set
// of the principal's upstream pseudonyms U; {prefix}{P}:U, an entry
// ("version sealed"); {prefix}{P}:U:lock, a refresh lease.
const (
	accountKeyPrefix = "vigil:accounts:"
	domainAccount    = "account"
	// maxAccountBytes bounds an entry's data.
	maxAccountBytes = 64 << 10
	// maxAccountsListed bounds the entries List reads of one principal.
	maxAccountsListed = 256
)

// accountKeys are the keys of one (principal, upstream).
type accountKeys struct {
	principal, member, set, entry, lock string
}

func (a *AccountStore) keys(principal, upstream string) accountKeys {
	p := a.s.store.Pseudonym("", "account principal\x00"+principal)
	k := accountKeys{principal: p, set: accountKeyPrefix + "{" + p + "}"}
	if upstream != "" {
		k.member = a.s.store.Pseudonym("", "account upstream\x00"+upstream)
		k.entry = k.set + ":" + k.member
		k.lock = k.entry + ":lock"
	}
	return k
}

// accountAD is the authenticated data of an entry.
func accountAD(k accountKeys, version uint64) []byte {
	var b []byte
	for _, p := range []string{domainAccount, k.principal, k.member, strconv.FormatUint(version, 10)} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// seal returns the stored value of upstream's data at version.
func (a *AccountStore) seal(k accountKeys, upstream string, data []byte, version uint64) string {
	plain := binary.BigEndian.AppendUint32(nil, uint32(len(upstream)))
	plain = append(append(plain, upstream...), data...)
	v := strconv.AppendUint(nil, version, 10)
	v = append(v, ' ')
	return string(a.s.keys.Seal(v, plain, accountAD(k, version)))
}

// open returns the upstream and data a stored value holds, and its
// version; ok is false when it fails to open.
func (a *AccountStore) open(k accountKeys, v string) (upstream string, data []byte, version uint64, ok bool) {
	sp := 0
	for sp < len(v) && v[sp] != ' ' {
		sp++
	}
	version, err := strconv.ParseUint(v[:sp], 10, 64)
	if err != nil || sp == len(v) {
		return "", nil, 0, false
	}
	plain, err := a.s.keys.Open(nil, []byte(v[sp+1:]), accountAD(k, version))
	if err != nil || len(plain) < 4 {
		return "", nil, version, false
	}
	n := int(binary.BigEndian.Uint32(plain))
	if len(plain) < 4+n {
		return "", nil, version, false
	}
	return string(plain[4 : 4+n]), plain[4+n:], version, true
}

// refuse counts and logs an entry that fails to open, and deletes it at
// its version: whoever wrote it, it cannot serve.
func (a *AccountStore) refuse(ctx context.Context, k accountKeys, version uint64) {
	if m := a.s.metrics; m != nil {
		m.refused(redisstore.RefusedRecord)
	}
	a.s.logger.Warn("redisshare: a token vault entry fails to open under the cluster key: deleted")
	if k.entry != "" {
		_ = deleteAccount.Run(ctx, a.s.client, []string{k.entry, k.set}, version, k.member).Err()
	}
}

// Get returns the entry of (principal, upstream) and its version, or nil
// and 0 when there is none (or it failed to open, and was deleted).
func (a *AccountStore) Get(ctx context.Context, principal, upstream string) ([]byte, uint64, error) {
	k := a.keys(principal, upstream)
	v, err := a.s.client.Get(ctx, k.entry).Result()
	if errors.Is(err, redis.Nil) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("redisshare: reading the token vault: %w", err)
	}
	name, data, version, ok := a.open(k, v)
	if !ok || name != upstream {
		a.refuse(ctx, k, version)
		return nil, 0, nil
	}
	return data, version, nil
}

// putAccount stores KEYS[1] when its version is ARGV[1] (0: none, and
// the set KEYS[2] holds fewer than ARGV[2] live entries), with ARGV[4] as
// its value and a TTL of ARGV[3] ms, and adds ARGV[5] to the set. The
// entries it checks are the set's members under ARGV[6], in the slot of
// KEYS[2] (their hash tag is the same).
var putAccount = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
local v = 0
if cur then v = tonumber(string.match(cur, '^(%d+) ')) or -1 end
if v ~= tonumber(ARGV[1]) then return 0 end
local ttl = tonumber(ARGV[3])
if v == 0 then
  local n = 0
  for _, m in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    if redis.call('EXISTS', ARGV[6] .. m) == 1 then n = n + 1 else redis.call('SREM', KEYS[2], m) end
  end
  if n >= tonumber(ARGV[2]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ttl)
redis.call('SADD', KEYS[2], ARGV[5])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
`)

// deleteAccount deletes KEYS[1] when its version is ARGV[1] (0: any) and
// removes ARGV[2] from the set KEYS[2].
var deleteAccount = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('SREM', KEYS[2], ARGV[2])
  return 0
end
if tonumber(ARGV[1]) ~= 0 and tonumber(string.match(cur, '^(%d+) ')) ~= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
return 1
`)

// unlockAccount deletes the lease KEYS[1] if ARGV[1] holds it.
var unlockAccount = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Put stores data as the entry of (principal, upstream) when its version
// is still version (0: none, and the principal holds fewer than limit
// entries), expiring after ttl; stored is false when it did not.
func (a *AccountStore) Put(ctx context.Context, principal, upstream string, data []byte, version uint64, limit int, ttl time.Duration) (bool, error) {
	if len(data) > maxAccountBytes {
		return false, errors.New("redisshare: a token vault entry over 64 KiB")
	}
	k := a.keys(principal, upstream)
	v := a.seal(k, upstream, data, version+1)
	n, err := putAccount.Run(ctx, a.s.client, []string{k.entry, k.set},
		version, limit, max(ttl.Milliseconds(), 1), v, k.member, k.set+":").Int()
	if err != nil {
		return false, fmt.Errorf("redisshare: writing the token vault: %w", err)
	}
	return n == 1, nil
}

// Delete removes the entry of (principal, upstream) when its version is
// version (0: any), and reports whether it did.
func (a *AccountStore) Delete(ctx context.Context, principal, upstream string, version uint64) (bool, error) {
	k := a.keys(principal, upstream)
	n, err := deleteAccount.Run(ctx, a.s.client, []string{k.entry, k.set}, version, k.member).Int()
	if err != nil {
		return false, fmt.Errorf("redisshare: deleting from the token vault: %w", err)
	}
	return n == 1, nil
}

// List returns the entries of principal by upstream (at most 256).
func (a *AccountStore) List(ctx context.Context, principal string) (map[string][]byte, error) {
	k := a.keys(principal, "")
	members, err := a.s.client.SMembers(ctx, k.set).Result()
	if err != nil {
		return nil, fmt.Errorf("redisshare: listing the token vault: %w", err)
	}
	if len(members) > maxAccountsListed {
		members = members[:maxAccountsListed]
	}
	pipe := a.s.client.Pipeline()
	gets := make([]*redis.StringCmd, len(members))
	for i, m := range members {
		gets[i] = pipe.Get(ctx, k.set+":"+m)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisshare: listing the token vault: %w", err)
	}
	out := make(map[string][]byte, len(members))
	for i, m := range members {
		v, err := gets[i].Result()
		if err != nil {
			continue // expired since: the next Put drops it from the set
		}
		ek := k
		ek.member, ek.entry = m, k.set+":"+m
		upstream, data, version, ok := a.open(ek, v)
		if !ok || a.s.store.Pseudonym("", "account upstream\x00"+upstream) != m {
			a.refuse(ctx, ek, version)
			continue
		}
		out[upstream] = data
	}
	return out, nil
}

// TryLock takes the lease of (principal, upstream) for ttl unless
// another holds it.
func (a *AccountStore) TryLock(ctx context.Context, principal, upstream string, ttl time.Duration) (string, bool, error) {
	token := rand.Text()
	ok, err := a.s.client.SetNX(ctx, a.keys(principal, upstream).lock, token, ttl).Result()
	if err != nil {
		return "", false, fmt.Errorf("redisshare: locking a token vault entry: %w", err)
	}
	return token, ok, nil
}

// Unlock releases the lease of (principal, upstream) if token holds it.
func (a *AccountStore) Unlock(ctx context.Context, principal, upstream, token string) error {
	if err := unlockAccount.Run(ctx, a.s.client, []string{a.keys(principal, upstream).lock}, token).Err(); err != nil {
		return fmt.Errorf("redisshare: unlocking a token vault entry: %w", err)
	}
	return nil
}
