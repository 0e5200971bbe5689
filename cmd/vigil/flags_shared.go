package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
)

// sharedFlags are the shared mode (-redis): Redis's URL, transport and
// credentials, and the replicas' keys (VIGIL_CLUSTER_KEY*), which seal
// requestState too (VIGIL_REQUEST_STATE_KEY, else the cluster key).
type sharedFlags struct{}

func (sharedFlags) register(fs *flag.FlagSet, cfg *config) {
	fs.StringVar(&cfg.redisURL, "redis", "", "share the 2025-era sessions with the other replicas on Redis at this `URL`: one node (rediss://[user@]host:port/db), a primary under Sentinel (rediss+sentinel://[user@]S1:26379,S2,S3/master[/db][?sentinel_user=NAME]) or a Cluster (rediss+cluster://[user@]N1:6379,N2,N3); TLS, or redis… only on loopback: any replica then serves any session, with no session affinity; a password is refused here, as user:password@ or as a parameter (?password=...): give it in VIGIL_REDIS_PASSWORD (the Sentinels' in VIGIL_REDIS_SENTINEL_PASSWORD)")
	fs.BoolVar(&cfg.redisOutageUnready, "redis-outage-unready", false, "with -redis, /readyz answers 503 whenever Redis does not answer, instead of staying ready and serving what needs no Redis (stateless calls, the sessions the replica holds): every replica then leaves the load balancer at once while Redis is away (deploy/SCALING.md)")
	fs.StringVar(&cfg.redisCA, "redis-ca", "", "PEM `file` of the certificate authorities that Redis's certificate (rediss://) must chain to, instead of the system's")
	fs.BoolVar(&cfg.redisPlaintext, "redis-insecure-plaintext", false, "accept a redis:// URL (no TLS) to a Redis that is not on loopback, and plain connections to the hosts off loopback that Redis names (a Sentinel's primary, the nodes of CLUSTER SLOTS), where anyone on the path reads the sessions and the password and can rewrite them: for tests and labs only")
}

func (sharedFlags) resolve(cfg *config, src flagSource) error {
	if cfg.redisURL != src.fromEnv["redis"] && flagvalue.URLHasPassword(cfg.redisURL) {
		// Argv is readable by every local user (ps, /proc): no secret there.
		// A password parameter (?password=, ?sentinel_password=) is one too.
		return errors.New("-redis: a password on the command line is visible to every local user; pass it in VIGIL_REDIS_PASSWORD (the Sentinels' in VIGIL_REDIS_SENTINEL_PASSWORD), or the URL in VIGIL_REDIS_URL, instead")
	}
	cfg.redisPassword = src.getenv(envPrefix + "REDIS_PASSWORD")
	cfg.redisSentinelPassword = src.getenv(envPrefix + "REDIS_SENTINEL_PASSWORD")
	if (cfg.redisPassword != "" || cfg.redisSentinelPassword != "" || cfg.redisCA != "" || cfg.redisPlaintext || cfg.redisOutageUnready) && cfg.redisURL == "" {
		return fmt.Errorf("-redis-ca, -redis-insecure-plaintext, -redis-outage-unready, %sREDIS_PASSWORD and %sREDIS_SENTINEL_PASSWORD need -redis", envPrefix, envPrefix)
	}
	if err := readKeys(cfg, src.getenv); err != nil {
		return err
	}
	switch {
	case cfg.stdio && cfg.redisURL != "":
		return errors.New("-redis shares HTTP sessions between replicas; with -stdio there is one session, its own")
	case cfg.redisURL != "" && cfg.clusterKey == nil:
		return fmt.Errorf("-redis needs %sCLUSTER_KEY, the base64 of at least 32 random bytes shared by every replica (openssl rand -base64 48), from a Secret: without it whoever can write to Redis acts in any session", envPrefix)
	}
	return nil
}

// readKeys reads VIGIL_REQUEST_STATE_KEY, VIGIL_CLUSTER_KEY and
// VIGIL_CLUSTER_KEY_PREVIOUS through getenv into cfg.
func readKeys(cfg *config, getenv func(string) string) error {
	if v := getenv(envPrefix + "REQUEST_STATE_KEY"); v != "" {
		key, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(key) < 32 {
			return fmt.Errorf("%sREQUEST_STATE_KEY must be the base64 of at least 32 bytes", envPrefix)
		}
		cfg.stateKey = key
	}
	for _, k := range []struct {
		name string
		dst  *[]byte
	}{{"CLUSTER_KEY", &cfg.clusterKey}, {"CLUSTER_KEY_PREVIOUS", &cfg.clusterKeyPrev}} {
		if v := strings.TrimSpace(getenv(envPrefix + k.name)); v != "" {
			key, err := base64.StdEncoding.DecodeString(v)
			if err != nil || len(key) < 32 {
				return fmt.Errorf("%s%s must be the base64 of at least 32 random bytes (openssl rand -base64 48)", envPrefix, k.name)
			}
			*k.dst = key
		}
	}
	if cfg.clusterKeyPrev != nil && cfg.clusterKey == nil {
		return fmt.Errorf("%sCLUSTER_KEY_PREVIOUS is the key a rotation replaces: it needs the new one in %sCLUSTER_KEY", envPrefix, envPrefix)
	}
	if cfg.stateKey == nil && cfg.clusterKey != nil {
		// The replicas' shared secret seals requestState too: the seal's
		// associated data names the purpose, which keeps the uses apart.
		cfg.stateKey = cfg.clusterKey
	}
	return nil
}
