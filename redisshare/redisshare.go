package redisshare

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/logthrottle"
	"github.com/vigil-mcp/vigil/internal/loopback"
	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/seal"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Config is what Open needs.
type Config struct {
	// URL names the Redis deployment, in one of three shapes, each with
	// TLS (rediss…, at least 1.2) or without (redis…, which Open refuses
	// for a host that is not loopback unless AllowPlaintext), and the ACL
	// user of the data nodes before '@' as in redis://:
	//   - one node: rediss://[user@]host:port/db;
	//   - a primary that Sentinels name (it follows their failovers):
	//     rediss+sentinel://[user@]S1[:26379],S2,S3/master[/db], with
	//     the Sentinels' own ACL user, if they have one, in the
	//     sentinel_user parameter;
	//   - a Redis Cluster, from seed nodes: rediss+cluster://[user@]N1[:6379],N2,N3.
	// Other parameters are go-redis's (redis.ParseURL, ParseFailoverURL,
	// ParseClusterURL); skip_verify is refused. Open refuses a URL of the
	// wrong shape: a Sentinel or a Cluster node named as a single node, a
	// plain node named as a Sentinel or a Cluster seed.
	URL string
	// Password is the password of the URL's user (an ACL user, or the
	// default user when the URL names none); it replaces the URL's own.
	Password string
	// SentinelPassword is the password of the Sentinels' user (the
	// sentinel_user parameter, or their default user), for a
	// redis+sentinel:// URL.
	SentinelPassword string
	// CAFile is a PEM file of the certificate authorities that the Redis
	// server's certificate must chain to, instead of the system's; it
	// needs TLS (rediss…). With Sentinel or Cluster, each node's
	// certificate must name the address it is reached at.
	CAFile string
	// AllowPlaintext allows a redis:// URL to a host that is not loopback,
	// and plain connections to the hosts that are not loopback which Redis
	// names (a Sentinel's primary and replicas, the nodes of CLUSTER
	// SLOTS), where anyone on the path reads the sessions and the
	// password. Without it every connection without TLS goes to loopback
	// or a Unix socket: one to another address is refused before it is
	// made, logged and counted.
	AllowPlaintext bool
	// UnreadyInOutage makes [Shared.Ready] false whenever Redis does not
	// answer. By default a replica that reached Redis once stays ready
	// through an outage, serving what needs no Redis (deploy/SCALING.md).
	UnreadyInOutage bool
	// MaxSessionEventBytes bounds the stored SSE events of one session (0:
	// 1 MiB).
	MaxSessionEventBytes int64
	// Logger gets the shared mode's messages; it never logs the URL's
	// password.
	Logger *slog.Logger
	// Registerer gets the metrics; nil for none.
	Registerer prometheus.Registerer
	// ClusterKey authenticates and encrypts what the replicas hand to
	// Redis: at least 32 random bytes, the same on every replica. PreviousClusterKey, during a rotation, is the key
	// still accepted besides it.
	ClusterKey, PreviousClusterKey []byte
}

// The replica's lease: renewed every leaseRenew, lost after leaseTTL.
// The renewals are also how the replica learns that Redis answers: Redis
// answers while it answered one within readyWindow, however long a
// request to a Redis that hangs takes to fail. Open's first contact (the
// shape's check and the lease) waits at most checkTimeout in all.
const (
	leaseTTL     = 5 * time.Second
	leaseRenew   = 250 * time.Millisecond
	readyWindow  = time.Second
	checkTimeout = 3 * time.Second
	// replicaAckTimeout bounds the wait for a replica's copy of a
	// session's state (Sentinel, Cluster): a primary without a replica in reach
	// delays each state change by it.
	replicaAckTimeout = 100 * time.Millisecond
)

// Shared is one replica's shared mode, from [Open] to [Shared.Close]. It
// is safe for concurrent use.
type Shared struct {
	target  *target
	store   *redisstore.Store
	keys    *seal.Keys // the cluster key, for the token vault (accounts.go)
	client  redis.UniversalClient
	rate    *redis_rate.Limiter // ratelimit.go
	logger  *slog.Logger
	metrics *metrics
	up      atomic.Bool // Redis answered the last lease renewal
	checked atomic.Bool // the deployment's shape was checked (probe.go)
	once    sync.Once
	// answered is when Redis last answered a renewal, as time since born
	// (a monotonic clock); 0: never.
	answered atomic.Int64
	born     time.Time
	stop     chan struct{}
	done     chan struct{}
	lastErr  string // the last misconfiguration logged, by the lease loop
	// pendingLog throttles the lease loop's warning that the subscriptions
	// made while Redis did not answer are not on Redis yet.
	pendingLog *logthrottle.Throttle

	unreadyInOutage bool
}

// Open connects to Redis, checks the deployment's shape, takes the
// replica's lease and starts renewing it until [Shared.Close]. A
// misconfiguration Open can tell (a URL of the wrong shape, a refused
// password, a certificate that does not verify, a primary or node that
// Redis names off loopback without TLS) is an error; a Redis that does
// not answer yet is not: the replica starts not ready and becomes ready
// when Redis answers (within a second). Open waits at most 3 s on Redis,
// whatever its shape and state. The replica is
// named after the host (a pod's name) and a random suffix. Open before
// the server, which broadcasts its changes through the shared mode
// ([Shared.ServerOptions]).
func Open(ctx context.Context, cfg Config) (*Shared, error) {
	t, err := parseTarget(cfg.URL)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), cfg.URL, "URL")
		if cfg.Password != "" {
			msg = strings.ReplaceAll(msg, cfg.Password, "***")
		}
		return nil, fmt.Errorf("-redis: %w", errors.New(msg))
	}
	if err := secureTransport(t, cfg); err != nil {
		return nil, fmt.Errorf("-redis %s: %w", t, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Shared{
		target: t, logger: logger, unreadyInOutage: cfg.UnreadyInOutage,
		born: time.Now(), stop: make(chan struct{}), done: make(chan struct{}),
		pendingLog: logthrottle.New(refusalLogPeriod, 3),
	}
	var refused func()
	if cfg.Registerer != nil {
		if s.metrics, err = newMetrics(cfg.Registerer); err != nil {
			return nil, err
		}
		refused = s.metrics.connRefused.Inc
	}
	t.configure(cfg, newDialer(t.tls(), time.Second, cfg.AllowPlaintext, logger, refused).DialContext)
	s.client = t.newClient()
	s.rate = redis_rate.NewLimiter(s.client)
	opts := []redisstore.Option{
		redisstore.WithReplica(replicaName()),
		redisstore.WithMaxSessionEventBytes(cfg.MaxSessionEventBytes),
		redisstore.WithLogger(logger),
		redisstore.WithClusterKey(cfg.ClusterKey, cfg.PreviousClusterKey),
		// No subscription waits on a Redis that does not answer (the
		// server's, the endpoint's, at start): each is asked of Redis
		// once it answers (contact).
		redisstore.WithAnswering(s.answering),
	}
	if t.shape == shapeSentinel || t.shape == shapeCluster {
		// A session acknowledged to its client is on a replica too:
		// the one Sentinel or the Cluster promotes has it
		// (deploy/SCALING.md).
		opts = append(opts, redisstore.WithReplicaAcks(1, replicaAckTimeout))
	}
	if m := s.metrics; m != nil {
		opts = append(opts, redisstore.WithObserver(m.observe), redisstore.WithRelayCounter(m.relayed), redisstore.WithRefusalCounter(m.refused))
	}
	if s.store, err = redisstore.New(ctx, s.client, opts...); err != nil {
		_ = s.client.Close()
		return nil, fmt.Errorf("-redis %s: %w", t, err)
	}
	if s.keys, err = seal.New(cfg.ClusterKey, cfg.PreviousClusterKey); err != nil { // checked by redisstore.New
		_ = s.store.Close()
		_ = s.client.Close()
		return nil, fmt.Errorf("-redis %s: %w", t, err)
	}
	// The first contact, the shape's check and the lease, waits at most
	// checkTimeout in all, whatever the shape and however Redis fails:
	// the service's start, and its liveness, do not wait on Redis.
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	err = s.contact(cctx)
	cancel()
	if err != nil {
		if !errors.Is(err, errAway) {
			_ = s.store.Close()
			_ = s.client.Close()
			if errors.As(err, new(x509.UnknownAuthorityError)) {
				err = fmt.Errorf("%w (if Redis's CA is a private one, give it with -redis-ca)", err)
			}
			return nil, fmt.Errorf("-redis %s: %w", t, err)
		}
		logger.Warn("Redis does not answer yet: not ready until it does", "redis", t.String(), "error", err)
	}
	go s.leaseLoop()
	logger.Info("shared sessions on Redis", "redis", t.String(), "replica", s.store.Replica())
	return s, nil
}

// Replica returns this replica's name among the service's replicas: the
// host's name and a random suffix.
func (s *Shared) Replica() string { return s.store.Replica() }

// Options returns the endpoint options of the shared mode: the cluster,
// and the event store every replica resumes from, for [streamable.New]
// (after an event store of its own, which they replace). The endpoint's
// idle and init timeouts (streamable.WithIdleTimeout, WithInitTimeout)
// are the sessions' in Redis too: New hands them to the cluster, and the
// records expire after them (after 30 minutes without a request when
// sessions never idle out). Give the options to one endpoint.
func (s *Shared) Options() []streamable.Option {
	c := replication.Config{Cluster: s.store}
	if m := s.metrics; m != nil {
		c.OnRequestLost, c.OnRelayRefused = m.lost.Inc, m.refused
	}
	return []streamable.Option{streamable.WithCluster(c), streamable.WithEventStore(eventStore{s.store})}
}

// ServerOptions returns the server options of the shared mode, for
// [server.New]: task ids that name this replica, so that the others
// forward a task's requests to it, the list changes and resource updates
// broadcast to the others, and the requestStates used, so that a state is
// accepted once over all replicas.
func (s *Shared) ServerOptions() []server.Option {
	return []server.Option{
		server.WithTaskIDPrefix(s.store.Replica() + "."), server.WithFanout(fanout{s}),
		server.WithUsedRequestStates(s.store.UseRequestState),
	}
}

// Ready reports whether the replica serves: once Redis answered (the
// deployment's shape checked, the lease taken), it stays ready through
// an outage of Redis, serving stateless requests and the sessions it
// holds and refusing the rest with 503 (the default, which keeps a fleet
// serving while Redis fails over); with Config.UnreadyInOutage, only
// while Redis answered a lease renewal within the last second (the lease
// is renewed four times a second). Serve the replica's readiness check
// from it (vigil's /readyz is 503 while it is false).
func (s *Shared) Ready() bool {
	if s.answered.Load() == 0 {
		return false
	}
	return !s.unreadyInOutage || s.answering()
}

// ReadinessDetail is, while the replica is ready without Redis (Redis
// does not answer, and Config.UnreadyInOutage is not set), a line that
// says so and what it refuses meanwhile, ending in a newline; otherwise
// "". It names no address and no credential: it is for the 200 answer of
// the replica's readiness check (vigil.WithReadinessDetail).
func (s *Shared) ReadinessDetail() string {
	if !s.Ready() || s.answering() {
		return ""
	}
	return "shared session store away (Redis does not answer): new sessions, and sessions this replica holds no view of, get 503; rate limits hold per replica\n"
}

// answering reports whether Redis answered the last renewal, within the
// last second.
func (s *Shared) answering() bool {
	a := s.answered.Load()
	return a != 0 && s.up.Load() && time.Since(s.born)-time.Duration(a) < readyWindow
}

// Close releases the lease and closes the store and the client.
func (s *Shared) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if s.answering() {
			_ = s.store.ReleaseLease(ctx)
		}
		err = errors.Join(s.store.Close(), s.client.Close())
	})
	return err
}

// contact checks the deployment's shape until that was done once, then
// renews the lease, and notes whether Redis answered.
func (s *Shared) contact(ctx context.Context) error {
	if !s.checked.Load() {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		err := s.target.check(cctx, s.client)
		cancel()
		if err != nil {
			s.noteAnswer(err)
			return err
		}
		s.checked.Store(true)
	}
	ctx, cancel := context.WithTimeout(ctx, readyWindow)
	defer cancel()
	err := s.store.RenewLease(ctx, leaseTTL)
	if err != nil && away(err) {
		err = fmt.Errorf("%w: %w", errAway, err)
	}
	s.noteAnswer(err)
	if err == nil {
		if perr := s.store.SubscribePending(ctx); perr != nil {
			if ok, skipped := s.pendingLog.Allow(); ok {
				s.logger.Warn("cannot subscribe to Redis yet: trying again at the next renewal", "error", perr, "lines_not_logged", skipped)
			}
		}
	}
	return err
}

// noteAnswer notes whether Redis answered (err is nil), and logs a
// change.
func (s *Shared) noteAnswer(err error) {
	if err == nil {
		s.answered.Store(max(1, int64(time.Since(s.born))))
	}
	was := s.up.Swap(err == nil)
	switch {
	case err != nil && was:
		s.logger.Warn("Redis does not answer: sessions this replica holds no view of, and new sessions, get 503", "error", err, "ready", s.Ready())
	case err == nil && !was:
		s.logger.Info("Redis answers: ready", "redis", s.target.String())
	}
	if s.metrics != nil {
		s.metrics.setUp(err == nil)
	}
}

func (s *Shared) leaseLoop() {
	defer close(s.done)
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		err := s.contact(context.Background())
		if err != nil && !errors.Is(err, errAway) && err.Error() != s.lastErr {
			// Found once Redis answered: it does not mend by itself.
			s.logger.Error("Redis is misconfigured: not ready", "redis", s.target.String(), "error", err)
		}
		if err == nil || !errors.Is(err, errAway) {
			s.lastErr = ""
			if err != nil {
				s.lastErr = err.Error()
			}
		}
	}
}

// replicaName returns a new replica name: the host's name and 4 random
// characters, unique, and telling which pod a replica is.
func replicaName() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r == '.' || r == '~' || r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, host)
	if len(host) > 40 {
		host = host[:40]
	}
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return host + "-" + base64.RawURLEncoding.EncodeToString(b[:])
}

// secureTransport applies cfg's CA to t, and refuses a connection that
// anyone on the path could read or impersonate.
func secureTransport(t *target, cfg Config) error {
	conf := t.tls()
	if conf == nil {
		if cfg.CAFile != "" {
			return errors.New("a CA file (-redis-ca) is for TLS: use a rediss:// URL")
		}
		if cfg.AllowPlaintext || t.network() == "unix" {
			return nil
		}
		for _, addr := range t.addrs() {
			if host, _, _ := net.SplitHostPort(addr); !loopback.ListenAddr(host) {
				return errors.New("redis:// has no TLS, so anyone on the path to a Redis that is not on loopback reads the sessions and the password: use rediss://, or pass -redis-insecure-plaintext")
			}
		}
		return nil
	}
	if conf.InsecureSkipVerify {
		return errors.New("skip_verify would accept any server certificate: give the server's CA with -redis-ca instead")
	}
	if cfg.CAFile == "" {
		return nil
	}
	pem, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return fmt.Errorf("-redis-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("-redis-ca %s: no PEM certificate in it", cfg.CAFile)
	}
	conf.RootCAs = pool
	return nil
}

// UseDPoPProof records a DPoP proof as used, by the digest the resource
// server hands it (never a token, nor the proof's key or jti in clear),
// for ttl, and reports whether this is its first use on any replica: the
// oauth.DPoPConfig Replay of every replica, so that a proof replayed on
// another one is refused. An error means Redis did not answer: the proof
// is refused (503), not accepted unrecorded.
func (s *Shared) UseDPoPProof(ctx context.Context, digest string, ttl time.Duration) (bool, error) {
	return s.store.UseDPoPProof(ctx, digest, ttl)
}
