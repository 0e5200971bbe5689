package redisshare

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// shape is how a Redis deployment is reached.
type shape int

const (
	shapeNode     shape = iota // one node: redis://, rediss://
	shapeSentinel              // the primary that Sentinels name: redis+sentinel://
	shapeCluster               // a Redis Cluster from seed nodes: redis+cluster://
)

// Default ports of a host named without one.
const (
	sentinelPort = "26379"
	nodePort     = "6379"
)

// target is where the shared mode connects, parsed from Config.URL:
// exactly one of node, failover and cluster is set, as shape says.
type target struct {
	shape    shape
	node     *redis.Options
	failover *redis.FailoverOptions
	cluster  *redis.ClusterOptions
	// dial opens every connection, set by configure (dialer.go).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// errScheme names the URL forms Open takes.
var errScheme = errors.New("want redis://, rediss:// (one node), redis+sentinel://, rediss+sentinel:// (Sentinels and the master's name) or redis+cluster://, rediss+cluster:// (Cluster seed nodes)")

// parseTarget parses a URL of one of the forms of Config.URL. go-redis
// parses the options (redis.ParseURL, ParseFailoverURL,
// ParseClusterURL); the Sentinel and Cluster forms are rewritten into
// theirs first: the first host, the others as addr parameters.
func parseTarget(raw string) (*target, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	base, kind, _ := strings.Cut(scheme, "+")
	if !ok || kind == "" {
		opt, err := redis.ParseURL(raw)
		if err != nil {
			return nil, err
		}
		return &target{shape: shapeNode, node: opt}, nil
	}
	if (base != "redis" && base != "rediss") || (kind != "sentinel" && kind != "cluster") {
		return nil, fmt.Errorf("unknown URL scheme %q: %w", scheme, errScheme)
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	tail, _, _ = strings.Cut(tail, "#")
	path, rawQuery, _ := strings.Cut(tail, "?")
	var user *url.Userinfo
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		u, err := url.Parse("redis://" + authority[:i+1] + "h")
		if err != nil {
			return nil, errors.New("the URL's user and password do not parse")
		}
		user, authority = u.User, authority[i+1:]
	}
	port := nodePort
	if kind == "sentinel" {
		port = sentinelPort
	}
	addrs, err := hostList(authority, port)
	if err != nil {
		return nil, err
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("the URL's parameters: %w", err)
	}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	u := url.URL{Scheme: base, Host: addrs[0]}
	if kind == "cluster" {
		if p := strings.Trim(path, "/"); p != "" && p != "0" {
			return nil, fmt.Errorf("a Cluster has only database 0, not %q", p)
		}
		u.User, u.RawQuery = user, q.Encode()
		opt, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, err
		}
		if opt.TLSConfig != nil {
			opt.TLSConfig.ServerName = "" // each node's certificate names that node
			opt.TLSConfig.MinVersion = tls.VersionTLS12
		}
		return &target{shape: shapeCluster, cluster: opt}, nil
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if segs[0] == "" || len(segs) > 2 {
		return nil, errors.New("redis+sentinel:// needs the master's name as its path: redis+sentinel://S1,S2,S3/mymaster[/db]")
	}
	q.Set("master_name", segs[0])
	if len(segs) == 2 {
		u.Path = "/" + segs[1]
	}
	// The URL's user is the data nodes' (as in redis://); Sentinel's own
	// is the sentinel_user parameter.
	if user != nil {
		q.Set("username", user.Username())
		if pw, ok := user.Password(); ok {
			q.Set("password", pw)
		}
	}
	if su := q.Get("sentinel_user"); su != "" {
		u.User = url.User(su)
	}
	q.Del("sentinel_user")
	u.RawQuery = q.Encode()
	opt, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		return nil, err
	}
	if opt.TLSConfig != nil {
		opt.TLSConfig.ServerName = "" // each Sentinel's and node's certificate names it
	}
	return &target{shape: shapeSentinel, failover: opt}, nil
}

// hostList splits "h1[:p1],h2[:p2],..." into host:port addresses, with
// port where a host names none.
func hostList(s, port string) ([]string, error) {
	var addrs []string
	for h := range strings.SplitSeq(s, ",") {
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), port)
		}
		host, p, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return nil, fmt.Errorf("address %q: want host or host:port", h)
		}
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("address %q: invalid port", h)
		}
		addrs = append(addrs, h)
	}
	if len(addrs) == 0 {
		return nil, errors.New("the URL names no host")
	}
	return addrs, nil
}

// addrs are the addresses the URL names (the Sentinels', the seeds').
func (t *target) addrs() []string {
	switch t.shape {
	case shapeSentinel:
		return t.failover.SentinelAddrs
	case shapeCluster:
		return t.cluster.Addrs
	}
	return []string{t.node.Addr}
}

// tls is the TLS configuration (nil without TLS), shared by every
// connection.
func (t *target) tls() *tls.Config {
	switch t.shape {
	case shapeSentinel:
		return t.failover.TLSConfig
	case shapeCluster:
		return t.cluster.TLSConfig
	}
	return t.node.TLSConfig
}

// network is the node URL's network (tcp or unix); Sentinels and
// Cluster nodes are on TCP.
func (t *target) network() string {
	if t.shape == shapeNode {
		return t.node.Network
	}
	return "tcp"
}

// configure applies cfg's passwords and what the shared mode needs of
// every connection: dial's checks (the loopback rule of plain text, for
// the addresses Redis names too), fail fast while Redis is away (a request waits at
// most a second or two), and only the commands the ACL user of a shared
// deployment may run (deploy/): no CLIENT SETINFO, no CLIENT
// MAINT_NOTIFICATIONS.
func (t *target) configure(cfg Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	const timeout = time.Second
	t.dial = dial
	switch t.shape {
	case shapeSentinel:
		o := t.failover
		if cfg.Password != "" {
			o.Password = cfg.Password
		}
		if cfg.SentinelPassword != "" {
			o.SentinelPassword = cfg.SentinelPassword
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries = timeout, timeout, timeout, 1
		o.Dialer = dial          // the Sentinels', and the primary's and replicas' they name
		o.DisableIdentity = true // maintenance notifications: never for a failover client
	case shapeCluster:
		o := t.cluster
		if cfg.Password != "" {
			o.Password = cfg.Password
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries = timeout, timeout, timeout, 1
		// A failed primary refuses at once: one dial, not five 100 ms
		// apart, before the client asks another node (its redirections
		// with a stale map of slots made a new session wait 1.7-3.5 s
		// after a failover, and fail).
		o.DialerRetries = 1
		o.Dialer = dial // the seeds', and the nodes' CLUSTER SLOTS and redirections name
		o.DisableIdentity = true
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	default:
		o := t.node
		if cfg.Password != "" {
			o.Password = cfg.Password
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries = timeout, timeout, timeout, 1
		o.Dialer = dial
		o.DisableIdentity = true
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	}
}

// newClient returns the client of the target's shape.
func (t *target) newClient() redis.UniversalClient {
	switch t.shape {
	case shapeSentinel:
		return redis.NewFailoverClient(t.failover)
	case shapeCluster:
		return redis.NewClusterClient(t.cluster)
	}
	return redis.NewClient(t.node)
}

// String is where the client connects, without credentials: host:port/db
// of a node, the master's name and its Sentinels, the Cluster's seeds.
func (t *target) String() string {
	switch t.shape {
	case shapeSentinel:
		return fmt.Sprintf("sentinel %s/%d via %s", t.failover.MasterName, t.failover.DB, strings.Join(t.failover.SentinelAddrs, ","))
	case shapeCluster:
		return "cluster " + strings.Join(t.cluster.Addrs, ",")
	}
	host, port, err := net.SplitHostPort(t.node.Addr)
	if err != nil {
		return t.node.Addr
	}
	return fmt.Sprintf("%s/%d", net.JoinHostPort(host, port), t.node.DB)
}
