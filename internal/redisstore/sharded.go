package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// shardRetry is how long a channel that lost its node waits before it is
// subscribed again, while the Cluster's map of slots is reloaded.
const shardRetry = 100 * time.Millisecond

// shards keeps a Store's sharded subscriptions on a Redis Cluster
// (SSUBSCRIBE), which count it among a session's replicas: each channel
// on the primary of its slot, one connection per primary, so that PUBSUB
// SHARDNUMSUB on that primary counts every replica, where a classic
// PUBLISH and PUBSUB NUMSUB count one node's subscribers. The relays
// travel on the classic subscription, which a slot's migration does not
// interrupt. A channel whose node fails, or that Redis unsubscribes
// because its slot moved, is subscribed again on its slot's primary,
// retried every shardRetry; meanwhile the replica is not counted.
type shards struct {
	cc        *redis.ClusterClient
	confirmed func(ch string)
	logger    *slog.Logger

	mu       sync.Mutex
	template *redis.Options           // a node client's options, for a node a redirection names
	own      map[string]*redis.Client // clients of the nodes redirections named
	conns    map[string]*shardConn    // by node address
	at       map[string]*shardConn    // wanted channel → its connection, nil while it has none
	retrying bool
	closed   bool
	done     chan struct{}
	wg       sync.WaitGroup
}

// shardConn is the connection of a Store's sharded subscriptions on one
// primary.
type shardConn struct {
	addr  string
	ps    *redis.PubSub
	chans map[string]struct{}
}

func newShards(cc *redis.ClusterClient, confirmed func(ch string), logger *slog.Logger) *shards {
	return &shards{
		cc: cc, confirmed: confirmed, logger: logger,
		own: make(map[string]*redis.Client), conns: make(map[string]*shardConn), at: make(map[string]*shardConn), done: make(chan struct{}),
	}
}

// subscribe subscribes ch on its slot's primary. It fails when the
// Cluster cannot name or reach that primary.
func (h *shards) subscribe(ctx context.Context, ch string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	h.at[ch] = nil
	if err := h.place(ctx, ch, ""); err != nil {
		delete(h.at, ch)
		return err
	}
	return nil
}

// place subscribes the wanted channel ch on the node at addr, or with
// addr "" on its slot's primary as the client's map of slots names it
// (h.mu held).
func (h *shards) place(ctx context.Context, ch, addr string) error {
	var node *redis.Client
	if addr == "" || h.template == nil {
		var err error
		if node, err = h.cc.MasterForKey(ctx, ch); err != nil {
			return err
		}
		if h.template == nil {
			opt := *node.Options()
			h.template = &opt
		}
		if addr == "" {
			addr = node.Options().Addr
		} else if node.Options().Addr != addr {
			node = nil
		}
	}
	c := h.conns[addr]
	if c == nil {
		if node == nil {
			node = h.own[addr]
		}
		if node == nil {
			opt := *h.template
			opt.Addr = addr
			node = redis.NewClient(&opt)
			h.own[addr] = node
		}
		c = &shardConn{addr: addr, ps: node.SSubscribe(context.WithoutCancel(ctx)), chans: make(map[string]struct{})}
		h.conns[addr] = c
		h.wg.Add(1)
		go h.receive(c)
	}
	if err := c.ps.SSubscribe(ctx, ch); err != nil {
		return err
	}
	c.chans[ch] = struct{}{}
	h.at[ch] = c
	return nil
}

// unsubscribe ends the subscription of ch.
func (h *shards) unsubscribe(ch string) {
	h.mu.Lock()
	c, ok := h.at[ch]
	delete(h.at, ch)
	if ok && c != nil {
		delete(c.chans, ch)
	}
	h.mu.Unlock()
	if c != nil {
		_ = c.ps.SUnsubscribe(context.Background(), ch)
	}
}

// receive reads a primary's connection until it fails or is closed.
func (h *shards) receive(c *shardConn) {
	defer h.wg.Done()
	for {
		msg, err := c.ps.Receive(context.Background())
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			if slot, addr, ok := redirected(err); ok {
				h.movedSlot(c, slot, addr) // a subscription the map sent to the wrong node
				continue
			}
			var reply redis.Error
			if errors.As(err, &reply) {
				h.logger.Warn("redisstore: Redis refused a sharded subscription", "node", c.addr, "error", err)
				continue
			}
			h.lost(c, err)
			return
		}
		m, ok := msg.(*redis.Subscription)
		switch {
		case !ok: // no relay comes sharded: they are classic
		case m.Kind == "ssubscribe":
			h.confirmed(m.Channel)
		case m.Kind == "sunsubscribe":
			h.moved(c, m.Channel)
		}
	}
}

// redirected returns the slot and the node's address of a MOVED reply.
func redirected(err error) (int, string, bool) {
	f := strings.Fields(err.Error())
	if len(f) != 3 || f[0] != "MOVED" {
		return 0, "", false
	}
	slot, err := strconv.Atoi(f[1])
	return slot, f[2], err == nil
}

// moved places ch again when Redis unsubscribed it from c (its slot went
// to another primary); an unsubscribe the Store asked for is not moved.
func (h *shards) moved(c *shardConn, ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at[ch] != c {
		return
	}
	delete(c.chans, ch)
	h.at[ch] = nil
	h.cc.ReloadState(context.Background())
	h.placeNow(ch, "") // where the map says: a MOVED reply corrects it
}

// movedSlot places c's channels of slot on the node at addr, which a
// MOVED reply named.
func (h *shards) movedSlot(c *shardConn, slot int, addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range c.chans {
		if slotOf(ch) == slot && h.at[ch] == c {
			delete(c.chans, ch)
			h.at[ch] = nil
			h.placeNow(ch, addr)
		}
	}
}

// placeNow places the wanted channel ch on addr (see place), or has it
// retried (h.mu held).
func (h *shards) placeNow(ch, addr string) {
	if h.closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), subscribeWait)
	defer cancel()
	if err := h.place(ctx, ch, addr); err != nil {
		h.retry()
	}
}

// lost closes c, whose node failed, and places its channels again.
func (h *shards) lost(c *shardConn, err error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	if h.conns[c.addr] == c {
		delete(h.conns, c.addr)
	}
	for ch := range c.chans {
		if h.at[ch] == c {
			h.at[ch] = nil
		}
	}
	n := len(c.chans)
	h.retry()
	h.mu.Unlock()
	h.logger.Warn("redisstore: a Cluster node's subscriptions were lost; subscribing them again", "node", c.addr, "channels", n, "error", err)
	_ = c.ps.Close()
}

// retry starts the goroutine placing the channels that have no
// connection, unless it runs (h.mu held).
func (h *shards) retry() {
	if h.retrying || h.closed {
		return
	}
	h.retrying = true
	h.cc.ReloadState(context.Background())
	h.wg.Add(1)
	go h.replace()
}

// replace places every wanted channel without a connection, every
// shardRetry, until none is left.
func (h *shards) replace() {
	defer h.wg.Done()
	timer := time.NewTimer(shardRetry)
	defer timer.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-timer.C:
		}
		h.mu.Lock()
		left := 0
		for ch, c := range h.at {
			if c != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), subscribeWait)
			if err := h.place(ctx, ch, ""); err != nil {
				left++
			}
			cancel()
		}
		if left == 0 || h.closed {
			h.retrying = false
			h.mu.Unlock()
			return
		}
		h.cc.ReloadState(context.Background())
		h.mu.Unlock()
		timer.Reset(shardRetry)
	}
}

// close ends every subscription.
func (h *shards) close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.done)
	conns, own := h.conns, h.own
	h.conns, h.own = nil, nil
	h.mu.Unlock()
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.ps.Close())
	}
	for _, c := range own {
		errs = append(errs, c.Close())
	}
	h.wg.Wait()
	return errors.Join(errs...)
}

// slotOf returns the Cluster slot of key: CRC16 (XMODEM) of its hash tag,
// or of the whole key without one, modulo 16384.
func slotOf(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := range len(key) {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
