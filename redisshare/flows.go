package redisshare

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/redisstore"
)

// FlowStore keeps the authorizations of upstreams under way (cmd/vigil's
// -upstream-auth NAME=user: a link made for a principal, the sign-ins and
// the upstream's authorization of the browser that opened it) on Redis,
// so that a link made on one replica opens on any, and its steps land on
// any. A flow and each of its attempts (a step bound to a browser, named
// by its OAuth state) are opaque records the caller gives, sealed under
// the cluster key and bound to their own key; the keys are pseudonyms of
// the link's id, the state and the principal, so that Redis holds no
// link, state or principal in clear. The flows are bounded in all and
// per principal, expire, and an attempt is taken once over all replicas.
// Its methods are safe for concurrent use.
type FlowStore struct {
	s *Shared
}

// FlowStore returns the store of the authorizations under way on this
// replica's Redis.
func (s *Shared) FlowStore() *FlowStore { return &FlowStore{s: s} }

// The keys, all under one hash tag (one slot on a Redis Cluster, for the
// scripts): {prefix}all, a sorted set of every flow's pseudonym scored by
// its expiry (µs); {prefix}of:P, the same of one principal; {prefix}f:F, a
// flow's sealed record; {prefix}l:F, its attempts' pseudonyms scored by
// their making (µs); {prefix}b:F, the pseudonym of the attempt its link is
// bound to; {prefix}s:S, an attempt: "F sealed".
const (
	flowKeyPrefix = "vigil:connect:{flows}:"
	domainFlow    = "connect flow"
	domainAttempt = "connect attempt"
	// maxFlowBytes bounds a flow's or an attempt's record.
	maxFlowBytes = 4 << 10
	// flowTrims bounds the expired flows one Add removes.
	flowTrims = 100
)

// flowAD is the authenticated data of a record of domain under the key
// pseudonym name.
func flowAD(domain, name string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(domain)))
	b = append(b, domain...)
	return append(b, name...)
}

func (f *FlowStore) name(kind, v string) string {
	return f.s.store.Pseudonym("", "connect "+kind+"\x00"+v)
}

func (f *FlowStore) open(domain, name, v string) []byte {
	plain, err := f.s.keys.Open(nil, []byte(v), flowAD(domain, name))
	if err != nil {
		if m := f.s.metrics; m != nil {
			m.refused(redisstore.RefusedRecord)
		}
		f.s.logger.Warn("redisshare: a record of an authorization under way fails to open under the cluster key")
		return nil
	}
	return plain
}

// dropFlow is the Lua of removing the flow of pseudonym id (all its keys
// under prefix, and its member of the set all); it returns its record.
const dropFlow = `
local function drop(prefix, all, id)
  local f = prefix .. 'f:' .. id
  local l = prefix .. 'l:' .. id
  local rec = redis.call('GET', f)
  for _, s in ipairs(redis.call('ZRANGE', l, 0, -1)) do redis.call('DEL', prefix .. 's:' .. s) end
  redis.call('DEL', f, l, prefix .. 'b:' .. id)
  redis.call('ZREM', all, id)
  return rec
end
`

// addFlow: KEYS all, of, the flow's record; ARGV now (µs), expiry (µs),
// keep (ms), most, mostOf, record, id, prefix. Removes up to flowTrims
// expired flows, then the principal's oldest while it holds mostOf, or
// refuses when most are live; returns {stored, id, record, id, record...}
// of the flows it removed.
var addFlow = redis.NewScript(dropFlow + `
local out = {0}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ` + fmt.Sprint(flowTrims) + `)) do
  local rec = drop(ARGV[8], KEYS[1], id)
  if rec then table.insert(out, id); table.insert(out, rec) end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
local mine = redis.call('ZCARD', KEYS[2])
if mine >= tonumber(ARGV[5]) then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, mine - tonumber(ARGV[5]))) do
    redis.call('ZREM', KEYS[2], id)
    local rec = drop(ARGV[8], KEYS[1], id)
    if rec then table.insert(out, id); table.insert(out, rec) end
  end
elseif redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf') >= tonumber(ARGV[4]) then
  return out
end
redis.call('SET', KEYS[3], ARGV[6], 'PX', ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[7])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
out[1] = 1
return out
`)

// liveFlow is the Lua of whether the flow of pseudonym ARGV[2] is live at
// ARGV[1] (µs) and not bound (KEYS all, record, attempts, bound): its
// expiry then, else false.
const liveFlow = `
local exp = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not exp or tonumber(exp) <= tonumber(ARGV[1]) or redis.call('EXISTS', KEYS[2]) == 0 or redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
local px = math.floor((tonumber(exp) - tonumber(ARGV[1])) / 1000)
if px < 1 then return 0 end
`

// addAttempt: KEYS all, record, attempts, bound, the attempt; ARGV now
// (µs), id, sealed, keep, state's pseudonym, prefix. Adds
// the attempt to a live unbound flow, keeping its newest keep.
var addAttempt = redis.NewScript(liveFlow + `
redis.call('SET', KEYS[5], ARGV[2] .. ' ' .. ARGV[3], 'PX', px)
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[5])
local n = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[4])
if n > 0 then
  for _, s in ipairs(redis.call('ZRANGE', KEYS[3], 0, n - 1)) do
    redis.call('ZREM', KEYS[3], s)
    redis.call('DEL', ARGV[6] .. 's:' .. s)
  end
end
redis.call('PEXPIRE', KEYS[3], px)
return 1
`)

// bindFlow: KEYS as addAttempt's; ARGV now (µs), id, sealed, state's
// pseudonym, prefix. Binds a live unbound flow to the attempt: its others
// go.
var bindFlow = redis.NewScript(liveFlow + `
for _, s in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do redis.call('DEL', ARGV[5] .. 's:' .. s) end
redis.call('DEL', KEYS[3])
redis.call('SET', KEYS[4], ARGV[4], 'PX', px)
redis.call('SET', KEYS[5], ARGV[2] .. ' ' .. ARGV[3], 'PX', px)
return 1
`)

// takeAttempt: KEYS the attempt; ARGV prefix, its pseudonym. Returns and
// deletes it ("id sealed"); a flow bound to it is bound no more.
var takeAttempt = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return false end
redis.call('DEL', KEYS[1])
local sp = string.find(v, ' ', 1, true)
if not sp then return false end
local id = string.sub(v, 1, sp - 1)
local b = ARGV[1] .. 'b:' .. id
if redis.call('GET', b) == ARGV[2] then redis.call('DEL', b) end
redis.call('ZREM', ARGV[1] .. 'l:' .. id, ARGV[2])
return v
`)

// endFlow: KEYS all, of; ARGV id, prefix. Removes the flow and returns
// its record, false when it was gone.
var endFlow = redis.NewScript(dropFlow + `
redis.call('ZREM', KEYS[2], ARGV[1])
return drop(ARGV[2], KEYS[1], ARGV[1])
`)

// Add stores record as the flow id of principal, expiring at expires,
// unless most flows are live at now (stored is false then); first it
// removes up to a hundred expired flows, and the principal's oldest while
// it holds mostOf. ended are the records of the flows it removed.
func (f *FlowStore) Add(ctx context.Context, principal, id string, record []byte, now, expires time.Time, most, mostOf int) (stored bool, ended [][]byte, err error) {
	if len(record) > maxFlowBytes {
		return false, nil, errors.New("redisshare: a flow's record over 4 KiB")
	}
	fid := f.name("flow", id)
	keep := 2 * expires.Sub(now) // a removal finds the record of a flow expired a while ago
	res, err := addFlow.Run(ctx, f.s.client,
		[]string{flowKeyPrefix + "all", flowKeyPrefix + "of:" + f.name("principal", principal), flowKeyPrefix + "f:" + fid},
		now.UnixMicro(), expires.UnixMicro(), max(keep.Milliseconds(), 1), most, mostOf,
		f.s.keys.Seal(nil, record, flowAD(domainFlow, fid)), fid, flowKeyPrefix).Slice()
	if err != nil {
		return false, nil, fmt.Errorf("redisshare: adding a flow: %w", err)
	}
	if len(res) == 0 {
		return false, nil, errors.New("redisshare: adding a flow: an empty answer")
	}
	n, _ := res[0].(int64)
	for i := 1; i+1 < len(res); i += 2 {
		fid, _ := res[i].(string)
		rec, _ := res[i+1].(string)
		if plain := f.open(domainFlow, fid, rec); plain != nil {
			ended = append(ended, plain)
		}
	}
	return n == 1, ended, nil
}

// Flow returns the record of the flow id, nil when there is none (it
// ended, or expired a while ago: the record tells its expiry).
func (f *FlowStore) Flow(ctx context.Context, id string) ([]byte, error) {
	fid := f.name("flow", id)
	v, err := f.s.client.Get(ctx, flowKeyPrefix+"f:"+fid).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redisshare: reading a flow: %w", err)
	}
	return f.open(domainFlow, fid, v), nil
}

// attemptKeys returns the keys of an attempt state of the flow id, and
// their pseudonyms.
func (f *FlowStore) attemptKeys(id, state string) (keys []string, fid, sid string) {
	fid, sid = f.name("flow", id), f.name("state", state)
	return []string{flowKeyPrefix + "all", flowKeyPrefix + "f:" + fid, flowKeyPrefix + "l:" + fid, flowKeyPrefix + "b:" + fid, flowKeyPrefix + "s:" + sid}, fid, sid
}

// AddAttempt stores record as the attempt state of the flow id when the
// flow is live at now and not bound to a browser (false otherwise), until
// the flow expires; the flow keeps its newest keep attempts, the older
// ones are forgotten.
func (f *FlowStore) AddAttempt(ctx context.Context, id, state string, record []byte, now time.Time, keep int) (bool, error) {
	if len(record) > maxFlowBytes {
		return false, errors.New("redisshare: an attempt's record over 4 KiB")
	}
	keys, fid, sid := f.attemptKeys(id, state)
	n, err := addAttempt.Run(ctx, f.s.client, keys, now.UnixMicro(), fid,
		f.s.keys.Seal(nil, record, flowAD(domainAttempt, sid)), keep, sid, flowKeyPrefix).Int()
	if err != nil {
		return false, fmt.Errorf("redisshare: adding an attempt: %w", err)
	}
	return n == 1, nil
}

// Bind binds the flow id, live at now and not bound yet, to its attempt
// state of record (false otherwise): its other attempts are forgotten,
// and it takes no other until state's is taken.
func (f *FlowStore) Bind(ctx context.Context, id, state string, record []byte, now time.Time) (bool, error) {
	if len(record) > maxFlowBytes {
		return false, errors.New("redisshare: an attempt's record over 4 KiB")
	}
	keys, fid, sid := f.attemptKeys(id, state)
	n, err := bindFlow.Run(ctx, f.s.client, keys, now.UnixMicro(), fid,
		f.s.keys.Seal(nil, record, flowAD(domainAttempt, sid)), sid, flowKeyPrefix).Int()
	if err != nil {
		return false, fmt.Errorf("redisshare: binding a flow: %w", err)
	}
	return n == 1, nil
}

// Take returns the record of the attempt state and deletes it, at once:
// of two replicas taking one state, one gets it. nil when there is none.
// A flow bound to it is bound no more.
func (f *FlowStore) Take(ctx context.Context, state string) ([]byte, error) {
	sid := f.name("state", state)
	v, err := takeAttempt.Run(ctx, f.s.client, []string{flowKeyPrefix + "s:" + sid}, flowKeyPrefix, sid).Text()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redisshare: taking an attempt: %w", err)
	}
	_, sealed, ok := strings.Cut(v, " ")
	if !ok {
		return nil, nil
	}
	return f.open(domainAttempt, sid, sealed), nil
}

// End removes the flow id of principal and its attempts, and returns its
// record: nil when it was gone (another replica ended it, or it expired
// and was removed), so that one replica tells how it ended.
func (f *FlowStore) End(ctx context.Context, principal, id string) ([]byte, error) {
	fid := f.name("flow", id)
	v, err := endFlow.Run(ctx, f.s.client, []string{flowKeyPrefix + "all", flowKeyPrefix + "of:" + f.name("principal", principal)}, fid, flowKeyPrefix).Text()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redisshare: ending a flow: %w", err)
	}
	return f.open(domainFlow, fid, v), nil
}
