package redisshare

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// errAway is what a check returns when no node answered: Redis is away
// (down, unreachable, loading, failing over), which may mend by itself,
// unlike a misconfiguration.
var errAway = errors.New("no answer from Redis")

// away reports whether err says that Redis did not answer, rather than
// that it answered no: a refused or timed-out connection, a server that
// is loading, has no primary or no quorum. A refusal (WRONGPASS, NOPERM,
// an unknown command), a certificate that does not verify and an address
// the dialer refuses (plain text off loopback) are misconfigurations.
func away(err error) bool {
	if err == nil || errors.As(err, new(*shapeError)) || errors.As(err, new(*plaintextError)) {
		return false
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) || errors.As(err, &header) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) && !errors.Is(err, redis.ErrClosed) {
		msg := reply.Error()
		for _, transient := range []string{"LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "READONLY", "BUSY"} {
			if strings.HasPrefix(msg, transient) {
				return true
			}
		}
		return false
	}
	return true
}

// check asks the nodes the URL names what they are, and refuses a URL of
// another shape: a Sentinel or a Cluster node given as a plain node, a
// plain node given as a Sentinel or a Cluster seed, a master name the
// Sentinels do not know. It returns errAway (wrapped) when none
// answered, and nil when one did as the shape wants (nodes that do not
// answer are not held against it).
func (t *target) check(ctx context.Context, client redis.UniversalClient) error {
	if t.shape == shapeNode {
		err := wantMode(ctx, client, t.node.Addr, "standalone")
		if away(err) {
			return fmt.Errorf("%w: %w", errAway, err)
		}
		return err
	}
	var last error
	for _, addr := range t.addrs() {
		err := t.checkOne(ctx, addr)
		if err == nil {
			return nil
		}
		if !away(err) {
			return err
		}
		last = err
	}
	return fmt.Errorf("%w: %w", errAway, last)
}

// checkOne checks one Sentinel or Cluster seed.
func (t *target) checkOne(ctx context.Context, addr string) error {
	opt := &redis.Options{Addr: addr, TLSConfig: t.tls(), Dialer: t.dial, DisableIdentity: true, MaxRetries: -1}
	if t.shape == shapeSentinel {
		o := t.failover
		opt.Username, opt.Password = o.SentinelUsername, o.SentinelPassword
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = o.DialTimeout, o.ReadTimeout, o.WriteTimeout
	} else {
		o := t.cluster
		opt.Username, opt.Password = o.Username, o.Password
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = o.DialTimeout, o.ReadTimeout, o.WriteTimeout
	}
	c := redis.NewClient(opt)
	defer func() { _ = c.Close() }()
	if t.shape == shapeCluster {
		return wantMode(ctx, c, addr, "cluster")
	}
	if err := wantMode(ctx, c, addr, "sentinel"); err != nil {
		return err
	}
	err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", t.failover.MasterName).Err()
	if errors.Is(err, redis.Nil) {
		return shapeErrorf("the Sentinel at %s knows no master named %q", addr, t.failover.MasterName)
	}
	return err
}

// wantMode checks that the node at addr runs in mode (HELLO's "mode":
// standalone, sentinel or cluster). A Redis that refuses HELLO (older
// than 6, or an ACL without it) is not checked.
func wantMode(ctx context.Context, c redis.UniversalClient, addr, mode string) error {
	v, err := c.Do(ctx, "HELLO").Result()
	if err != nil {
		if away(err) {
			return err
		}
		var reply redis.Error
		if errors.As(err, &reply) && (strings.Contains(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "NOPERM")) {
			return nil
		}
		return err
	}
	got := helloField(v, "mode")
	if got == "" || got == mode {
		return nil
	}
	switch got {
	case "sentinel":
		return shapeErrorf("%s is a Sentinel, not a Redis node: name the Sentinels and the master in redis+sentinel://%s/<master name> (rediss+sentinel:// for TLS)", addr, addr)
	case "cluster":
		return shapeErrorf("%s is a Redis Cluster node: name the Cluster's nodes in redis+cluster://%s,... (rediss+cluster:// for TLS)", addr, addr)
	}
	switch mode {
	case "sentinel":
		return shapeErrorf("%s is a %s Redis node, not a Sentinel: name it in redis:// (or name the Sentinels in redis+sentinel://)", addr, got)
	case "cluster":
		return shapeErrorf("%s is a %s Redis node, not a Cluster node: name it in redis://", addr, got)
	}
	return shapeErrorf("%s runs in %s mode, not %s", addr, got, mode)
}

// helloField is one field of HELLO's answer: a map (RESP3) or a flat
// list of names and values (RESP2).
func helloField(v any, name string) string {
	switch m := v.(type) {
	case map[any]any:
		s, _ := m[name].(string)
		return s
	case map[string]any:
		s, _ := m[name].(string)
		return s
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			if k, _ := m[i].(string); k == name {
				s, _ := m[i+1].(string)
				return s
			}
		}
	}
	return ""
}

// shapeError says that a node is not of the shape the URL wants.
type shapeError struct{ msg string }

func (e *shapeError) Error() string { return e.msg }

func shapeErrorf(format string, args ...any) error {
	return &shapeError{msg: fmt.Sprintf(format, args...)}
}
