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
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/vigil-mcp/vigil/internal/loopback"
	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Config is what Open needs.
type Config struct {
	// URL is rediss://[user[:password]@]host:port/db (TLS, at least 1.2),
	// or redis:// without TLS, which Open refuses for a host that is not
	// loopback unless AllowPlaintext. Its skip_verify parameter is refused.
	URL string
	// Password is the password of the URL's user (an ACL user, or the
	// default user when the URL names none); it replaces the URL's own.
	Password string
	// CAFile is a PEM file of the certificate authorities that the Redis
	// server's certificate must chain to, instead of the system's; it
	// needs a rediss:// URL.
	CAFile string
	// AllowPlaintext allows a redis:// URL to a host that is not loopback,
	// where anyone on the path reads the sessions and the password.
	AllowPlaintext bool
	// IdleTimeout is the sessions' idle timeout: their records expire in
	// Redis after it.
	IdleTimeout time.Duration
	// InitTimeout is how long a session's record lives until its client
	// initialized (0: a minute, as streamable.DefaultInitTimeout).
	InitTimeout time.Duration
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
// The renewals are also how the replica learns that Redis answers: it is
// ready while Redis answered one within readyWindow, so that /readyz turns
// 503 within a second of Redis not answering, however long a request to
// a Redis that hangs takes to fail.
const (
	leaseTTL    = 5 * time.Second
	leaseRenew  = 250 * time.Millisecond
	readyWindow = time.Second
)

// Shared is one replica's shared mode, from [Open] to [Shared.Close]. It
// is safe for concurrent use.
type Shared struct {
	store   *redisstore.Store
	client  *redis.Client
	rate    *redis_rate.Limiter // ratelimit.go
	logger  *slog.Logger
	metrics *metrics
	up      atomic.Bool // Redis answered the last lease renewal
	// answered is when Redis last answered a renewal, as time since born
	// (a monotonic clock).
	answered atomic.Int64
	born     time.Time
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once

	idleTimeout time.Duration // the sessions' (the session quota's TTL)
}

// Open connects to Redis, takes the replica's lease and starts renewing
// it until [Shared.Close]. The replica is named after the host (a pod's
// name) and a random suffix. Open before the server, which broadcasts its
// changes through the shared mode ([Shared.ServerOptions]).
func Open(ctx context.Context, cfg Config) (*Shared, error) {
	opt, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", errors.New(strings.ReplaceAll(err.Error(), cfg.URL, "URL")))
	}
	if err := secureTransport(opt, cfg); err != nil {
		return nil, fmt.Errorf("-redis %s: %w", redactedAddr(opt), err)
	}
	// Fail fast while Redis is away: a request waits at most this long.
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second, time.Second
	opt.MaxRetries = 1
	// Only what the shared mode needs, which the ACL user of a shared
	// deployment may run (deploy/): no CLIENT SETINFO, no CLIENT
	// MAINT_NOTIFICATIONS.
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Shared{client: redis.NewClient(opt), logger: logger, idleTimeout: cfg.IdleTimeout, born: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	s.rate = redis_rate.NewLimiter(s.client)
	if cfg.Registerer != nil {
		if s.metrics, err = newMetrics(cfg.Registerer); err != nil {
			_ = s.client.Close()
			return nil, err
		}
	}
	opts := []redisstore.Option{
		redisstore.WithReplica(replicaName()),
		redisstore.WithIdleTimeout(cfg.IdleTimeout),
		redisstore.WithInitTimeout(cfg.InitTimeout),
		redisstore.WithMaxSessionEventBytes(cfg.MaxSessionEventBytes),
		redisstore.WithLogger(logger),
		redisstore.WithClusterKey(cfg.ClusterKey, cfg.PreviousClusterKey),
	}
	if m := s.metrics; m != nil {
		opts = append(opts, redisstore.WithObserver(m.observe), redisstore.WithRelayCounter(m.relayed), redisstore.WithRefusalCounter(m.refused))
	}
	if s.store, err = redisstore.New(ctx, s.client, opts...); err != nil {
		_ = s.client.Close()
		if errors.As(err, new(x509.UnknownAuthorityError)) {
			err = fmt.Errorf("%w (if Redis's CA is a private one, give it with -redis-ca)", err)
		}
		return nil, fmt.Errorf("-redis %s: %w", redactedAddr(opt), err)
	}
	s.renew(ctx)
	go s.leaseLoop()
	logger.Info("shared sessions on Redis", "redis", redactedAddr(opt), "replica", s.store.Replica())
	return s, nil
}

// Replica returns this replica's name among the service's replicas: the
// host's name and a random suffix.
func (s *Shared) Replica() string { return s.store.Replica() }

// Options returns the endpoint options of the shared mode: the cluster,
// and the event store every replica resumes from, for [streamable.New]
// (after an event store of its own, which they replace).
func (s *Shared) Options() []streamable.Option {
	c := replication.Config{Cluster: s.store}
	if m := s.metrics; m != nil {
		c.OnRequestLost, c.OnRelayRefused = m.lost.Inc, m.refused
	}
	return []streamable.Option{streamable.WithCluster(c), streamable.WithEventStore(s.store)}
}

// ServerOptions returns the server options of the shared mode, for
// [server.New]: task ids that name this replica, so that the others
// forward a task's requests to it, the list changes and resource updates
// broadcast to the others, and the requestStates used, so that a state is
// accepted once over all replicas.
func (s *Shared) ServerOptions() []server.Option {
	return []server.Option{
		server.WithTaskIDPrefix(s.store.Replica() + "."), server.WithFanout(s.store),
		server.WithUsedRequestStates(s.store.UseRequestState),
	}
}

// Ready reports whether Redis answered the replica's last lease renewal,
// and did so within the last second (the lease is renewed four times a
// second): serve the replica's readiness check from it (vigil's /readyz is
// 503 while it does not).
func (s *Shared) Ready() bool {
	return s.up.Load() && time.Since(s.born)-time.Duration(s.answered.Load()) < readyWindow
}

// Close releases the lease and closes the store and the client.
func (s *Shared) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.store.ReleaseLease(ctx)
		err = errors.Join(s.store.Close(), s.client.Close())
	})
	return err
}

// renew renews the lease and notes whether Redis answered.
func (s *Shared) renew(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, readyWindow)
	defer cancel()
	err := s.store.RenewLease(ctx, leaseTTL)
	if err == nil {
		s.answered.Store(int64(time.Since(s.born)))
	}
	was := s.up.Swap(err == nil)
	switch {
	case err != nil && was:
		s.logger.Warn("Redis does not answer: not ready; sessions this replica holds no view of get 503", "error", err)
	case err == nil && !was:
		s.logger.Info("Redis answers: ready")
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
			s.renew(context.Background())
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

// secureTransport applies cfg's password and CA to opt, and refuses a
// connection that anyone on the path could read or impersonate.
func secureTransport(opt *redis.Options, cfg Config) error {
	if cfg.Password != "" {
		opt.Password = cfg.Password
	}
	if opt.TLSConfig == nil {
		host, _, _ := net.SplitHostPort(opt.Addr)
		switch {
		case cfg.CAFile != "":
			return errors.New("a CA file (-redis-ca) is for TLS: use a rediss:// URL")
		case !cfg.AllowPlaintext && opt.Network != "unix" && !loopback.ListenAddr(host):
			return errors.New("redis:// has no TLS, so anyone on the path to a Redis that is not on loopback reads the sessions and the password: use rediss://, or pass -redis-insecure-plaintext")
		}
		return nil
	}
	if opt.TLSConfig.InsecureSkipVerify {
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
	opt.TLSConfig.RootCAs = pool
	return nil
}

// redactedAddr is where the client connects, without credentials.
func redactedAddr(opt *redis.Options) string {
	host, port, err := net.SplitHostPort(opt.Addr)
	if err != nil {
		return opt.Addr
	}
	return fmt.Sprintf("%s/%d", net.JoinHostPort(host, port), opt.DB)
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
