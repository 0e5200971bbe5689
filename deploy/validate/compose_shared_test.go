package validate

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	composeSharedFile = "deploy/compose.shared.yaml"
	nginxSharedFile   = "deploy/nginx/shared.conf"
)

// composeClusterKey is the VIGIL_CLUSTER_KEY the compose tests set.
const composeClusterKey = "Y2x1c3RlciBrZXkgb2YgdGhlIGNvbXBvc2UgdGVzdHMsIDQ4IGJ5dGVzIGxvbmcuLi4u"

// composeSharedEnv is the environment compose.shared.yaml's header says
// to set.
var composeSharedEnv = []string{
	"VIGIL_REQUEST_STATE_KEY=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "VIGIL_REDIS_PASSWORD=" + composeRedisPassword,
	"VIGIL_REDIS_INTERNAL_PASSWORD=" + composeInternalPassword, "VIGIL_CLUSTER_KEY=" + composeClusterKey,
}

// composeInternalPassword is the VIGIL_REDIS_INTERNAL_PASSWORD (the Redis
// replica's and the Sentinels') compose.shared.yaml is loaded with.
const composeInternalPassword = "test-password-of-the-internal-users"

// loadSharedCompose loads deploy/compose.shared.yaml as docker compose
// would, with composeSharedEnv.
func loadSharedCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{repoPath(t, composeSharedFile)},
		cli.WithWorkingDirectory(repoPath(t, "deploy")),
		cli.WithName("vigil-shared"),
		cli.WithResolvedPaths(true),
		cli.WithInterpolation(true),
		cli.WithEnv(composeSharedEnv),
	)
	require.NoError(t, err)
	p, err := opts.LoadProject(t.Context())
	require.NoError(t, err, composeSharedFile)
	return p
}

// TestComposeShared: Redis (a primary and its replica under three
// Sentinels), two vigil replicas pointed at the Sentinels with one
// request-state key, and nginx in front of them with no affinity; the
// files it mounts exist.
func TestComposeShared(t *testing.T) {
	p := loadSharedCompose(t)
	assert.ElementsMatch(t, []string{"redis", "redis-replica", "sentinel-1", "sentinel-2", "sentinel-3", "vigil-1", "vigil-2", "proxy"}, p.ServiceNames())
	var key string
	for _, name := range []string{"vigil-1", "vigil-2"} {
		s := composeService(t, p, name)
		require.NotNil(t, s.Build, name)
		assert.Equal(t, "deploy/Dockerfile", s.Build.Dockerfile)
		env := s.Environment
		require.NotNil(t, env["VIGIL_REDIS_URL"], name)
		assert.Equal(t, "rediss+sentinel://vigil@sentinel-1:26379,sentinel-2:26379,sentinel-3:26379/vigil", *env["VIGIL_REDIS_URL"], name)
		require.NotNil(t, env["VIGIL_REQUEST_STATE_KEY"], name)
		if key == "" {
			key = *env["VIGIL_REQUEST_STATE_KEY"]
		}
		assert.Equal(t, key, *env["VIGIL_REQUEST_STATE_KEY"], "%s: every replica has the same request-state key", name)
		require.NotNil(t, env["VIGIL_CLUSTER_KEY"], name)
		assert.Equal(t, composeClusterKey, *env["VIGIL_CLUSTER_KEY"], "%s: the cluster key comes from the environment (or deploy/.env), never the file", name)
		for _, dep := range []string{"redis", "redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"} {
			assert.Contains(t, s.DependsOn, dep, name)
		}
		assert.True(t, s.ReadOnly, name)
		for _, port := range s.Ports {
			assert.Equal(t, "127.0.0.1", port.HostIP, "%s publishes only on loopback", name)
		}
	}

	// Without either key, compose refuses to start (the replicas would not
	// share the 2026-07-28 requests' state; vigil -redis needs the cluster
	// key).
	for _, missing := range []string{"VIGIL_REQUEST_STATE_KEY", "VIGIL_CLUSTER_KEY", "VIGIL_REDIS_INTERNAL_PASSWORD"} {
		env := append(slices.Clone(composeSharedEnv), missing+"=")
		opts, err := cli.NewProjectOptions([]string{repoPath(t, composeSharedFile)},
			cli.WithWorkingDirectory(repoPath(t, "deploy")), cli.WithName("vigil-shared"), cli.WithInterpolation(true),
			cli.WithEnv(env))
		require.NoError(t, err)
		_, err = opts.LoadProject(t.Context())
		require.ErrorContains(t, err, missing)
	}

	proxy := composeService(t, p, "proxy")
	conf := mountSource(t, proxy, "/etc/nginx/conf.d/default.conf")
	assert.Equal(t, repoPath(t, nginxSharedFile), conf)
	for _, v := range proxy.Volumes {
		if v.Type == types.VolumeTypeBind {
			assert.True(t, v.ReadOnly, "proxy: mount %s should be read-only", v.Target)
		}
	}
}

// TestNginxSharedConfig: round robin over both replicas, no affinity, SSE
// unbuffered, a draining replica's 503 retried on the other.
func TestNginxSharedConfig(t *testing.T) {
	b, err := os.ReadFile(repoPath(t, nginxSharedFile))
	require.NoError(t, err)
	conf := regexp.MustCompile(`(?m)#.*$`).ReplaceAllString(string(b), "") // directives only
	for _, server := range []string{"vigil-1:8080", "vigil-2:8080"} {
		assert.Regexp(t, `(?m)^\s*server\s+`+regexp.QuoteMeta(server)+`\b`, conf)
	}
	for _, affinity := range []string{"ip_hash", "hash ", "sticky", "least_conn", "random"} {
		assert.NotContains(t, conf, affinity, "no session affinity: round robin")
	}
	for _, directive := range []string{
		"proxy_pass http://vigil;", "proxy_http_version 1.1;", "proxy_buffering off;", "proxy_request_buffering off;",
		"proxy_next_upstream error timeout http_503 non_idempotent;",
	} {
		assert.Contains(t, conf, directive)
	}
}

// TestComposeSharedSentinels: three Sentinels on TLS watch the primary
// redis with a quorum of two, as the ACL user sentinel with the internal
// password, naming the nodes by host name (their certificate's names);
// the replica replicates redis over TLS, as the ACL user replica, and
// each data node announces its host name.
func TestComposeSharedSentinels(t *testing.T) {
	p := loadSharedCompose(t)
	for _, name := range []string{"sentinel-1", "sentinel-2", "sentinel-3"} {
		s := composeService(t, p, name)
		script := strings.Join(s.Entrypoint, "\n")
		for _, line := range []string{
			"port 0", "tls-port 26379", "tls-replication yes", "sentinel resolve-hostnames yes", "sentinel announce-hostnames yes",
			"sentinel monitor vigil redis 6379 2", "sentinel auth-user vigil sentinel", "sentinel auth-pass vigil $REDIS_INTERNAL_PASSWORD",
			"--sentinel",
		} {
			assert.Contains(t, script, line, name)
		}
		require.NotNil(t, s.Environment["SENTINEL_NAME"], name)
		assert.Equal(t, name, *s.Environment["SENTINEL_NAME"])
		require.NotNil(t, s.Environment["REDIS_INTERNAL_PASSWORD"], name)
		assert.Equal(t, composeInternalPassword, *s.Environment["REDIS_INTERNAL_PASSWORD"], name)
	}
	replica := composeService(t, p, "redis-replica")
	args := strings.Join(replica.Command, " ")
	assert.Contains(t, args, "--replicaof redis 6379")
	assert.Contains(t, args, "--replica-announce-ip redis-replica")
	assert.Contains(t, strings.Join(composeService(t, p, "redis").Command, " "), "--replica-announce-ip redis")
	for _, name := range []string{"redis", "redis-replica"} {
		s := composeService(t, p, name)
		assert.Contains(t, strings.Join(s.Command, " "), "--tls-replication yes", name)
		assert.Contains(t, strings.Join(s.Command, " "), "--include /run/redis/auth.conf", name)
		script := strings.Join(s.Entrypoint, "\n")
		assert.Contains(t, script, "user replica on #", name)
		assert.Contains(t, script, "user sentinel on #", name)
		assert.Contains(t, script, "masteruser replica", name)
	}
}
