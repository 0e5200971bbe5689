package validate

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// composeRedisPassword is the VIGIL_REDIS_PASSWORD compose.shared.yaml is
// loaded with.
const composeRedisPassword = "test-password-of-the-acl-user"

// testedRedisACL returns the ACL rule of Vigil's Redis user that the tests
// run Vigil under (vigilACL of internal/testkit/redistest), which the
// shared kits must give Redis word for word.
func testedRedisACL(t *testing.T) string {
	t.Helper()
	src := string(readRepoFile(t, "internal/testkit/redistest/tls.go"))
	decl := regexp.MustCompile(`(?s)const vigilACL = (.*?)\n\n`).FindStringSubmatch(src)
	require.NotNil(t, decl, "vigilACL in internal/testkit/redistest/tls.go")
	var rule strings.Builder
	for _, lit := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(decl[1], -1) {
		rule.WriteString(lit[1])
	}
	require.Contains(t, rule.String(), "~vigil:*")
	return rule.String()
}

// checkRedisServerArgs: TLS only (no plain port) on 6379, and the users
// from an ACL file.
func checkRedisServerArgs(args []string) error {
	flag := func(name string) string {
		if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	var errs []error
	if flag("--port") != "0" {
		errs = append(errs, errors.New("redis-server: --port 0 (no plain port) is missing"))
	}
	if flag("--tls-port") != "6379" {
		errs = append(errs, errors.New("redis-server: --tls-port 6379 is missing"))
	}
	for _, f := range []string{"--tls-cert-file", "--tls-key-file", "--aclfile"} {
		if flag(f) == "" {
			errs = append(errs, fmt.Errorf("redis-server: %s is missing", f))
		}
	}
	for _, p := range strings.Fields(flag("--tls-protocols")) {
		if p != "TLSv1.2" && p != "TLSv1.3" {
			errs = append(errs, fmt.Errorf("redis-server: --tls-protocols has %s: TLS 1.2 at least", p))
		}
	}
	if slices.Contains(args, "--requirepass") || slices.Contains(args, "--user") {
		errs = append(errs, errors.New("redis-server: users come from the ACL file only, with no password on the command line"))
	}
	return errors.Join(errs...)
}

// checkACLScript: the script that writes the ACL file turns the default
// user off and gives vigil's user the tested rule, and a hashed password.
func checkACLScript(script, rule, tested string) error {
	var errs []error
	if !strings.Contains(script, "user default off") {
		errs = append(errs, errors.New("the ACL file does not turn the default user off"))
	}
	if !strings.Contains(script, "user vigil on #") || !strings.Contains(script, "sha256sum") {
		errs = append(errs, errors.New("the ACL file does not give the user vigil the SHA-256 of its password"))
	}
	if rule != tested {
		errs = append(errs, fmt.Errorf("VIGIL_ACL %q is not the rule the tests run Vigil under (internal/testkit/redistest): %q", rule, tested))
	}
	return errors.Join(errs...)
}

// checkRedisURL: rediss:// naming the ACL user vigil, with no password.
func checkRedisURL(who, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%s: VIGIL_REDIS_URL: %w", who, err)
	case u.Scheme != "rediss" && u.Scheme != "rediss+sentinel":
		return fmt.Errorf("%s: VIGIL_REDIS_URL %q is not rediss:// (TLS)", who, raw)
	case u.User == nil || u.User.Username() != "vigil":
		return fmt.Errorf("%s: VIGIL_REDIS_URL %q does not name the ACL user vigil", who, raw)
	}
	if _, ok := u.User.Password(); ok {
		return fmt.Errorf("%s: VIGIL_REDIS_URL has a password: it belongs in VIGIL_REDIS_PASSWORD, from a secret", who)
	}
	return nil
}

// checkComposeSharedRedis checks compose.shared.yaml's Redis (its data
// nodes: the primary and its replica) and how the replicas reach it.
func checkComposeSharedRedis(p *types.Project, tested string) error {
	var errs []error
	for _, node := range []string{"redis", "redis-replica"} {
		redis, ok := p.Services[node]
		if !ok {
			return fmt.Errorf("no service %s", node)
		}
		errs = append(errs, checkRedisServerArgs(redis.Command))
		script, rule := strings.Join(redis.Entrypoint, "\n"), ""
		if v := redis.Environment["VIGIL_ACL"]; v != nil {
			rule = *v
		}
		errs = append(errs, checkACLScript(script, rule, tested))
		if v := redis.Environment["REDIS_PASSWORD"]; v == nil || *v != composeRedisPassword {
			errs = append(errs, fmt.Errorf("%s: REDIS_PASSWORD is not ${VIGIL_REDIS_PASSWORD}", node))
		}
	}
	for name, s := range p.Services {
		env := s.Environment
		if !strings.HasPrefix(name, "vigil") {
			continue
		}
		get := func(k string) string {
			if v := env[k]; v != nil {
				return *v
			}
			return ""
		}
		errs = append(errs, checkRedisURL(name, get("VIGIL_REDIS_URL")))
		if get("VIGIL_REDIS_PASSWORD") != composeRedisPassword {
			errs = append(errs, fmt.Errorf("%s: VIGIL_REDIS_PASSWORD is not ${VIGIL_REDIS_PASSWORD}", name))
		}
		if get("VIGIL_REDIS_INSECURE_PLAINTEXT") != "" {
			errs = append(errs, fmt.Errorf("%s: VIGIL_REDIS_INSECURE_PLAINTEXT", name))
		}
		ca, mounted := get("VIGIL_REDIS_CA"), false
		for _, v := range s.Volumes {
			mounted = mounted || v.Target == ca && v.ReadOnly
		}
		if ca == "" || !mounted {
			errs = append(errs, fmt.Errorf("%s: VIGIL_REDIS_CA %q is not a file mounted read-only", name, ca))
		}
	}
	return errors.Join(errs...)
}

// TestComposeSharedRedisTLS checks compose.shared.yaml's Redis, then
// shows that each check fails on a manifest mutated to break it.
func TestComposeSharedRedisTLS(t *testing.T) {
	tested := testedRedisACL(t)
	require.NoError(t, checkComposeSharedRedis(loadSharedCompose(t), tested))

	for _, m := range []struct {
		name    string
		mutate  func(*types.Project)
		wantErr string
	}{
		{"plain redis://", func(p *types.Project) {
			p.Services["vigil-1"].Environment["VIGIL_REDIS_URL"] = new("redis://redis:6379/0")
		}, "is not rediss://"},
		{"plain redis+sentinel://", func(p *types.Project) {
			p.Services["vigil-1"].Environment["VIGIL_REDIS_URL"] = new("redis+sentinel://vigil@sentinel-1:26379/vigil")
		}, "is not rediss://"},
		{"the replica's ACL", func(p *types.Project) {
			p.Services["redis-replica"].Environment["VIGIL_ACL"] = new(tested + " +flushall")
		}, "is not the rule the tests run Vigil under"},
		{"no ACL user", func(p *types.Project) {
			p.Services["vigil-2"].Environment["VIGIL_REDIS_URL"] = new("rediss://redis:6379/0")
		}, "does not name the ACL user vigil"},
		{"password in the URL", func(p *types.Project) {
			p.Services["vigil-1"].Environment["VIGIL_REDIS_URL"] = new("rediss://vigil:pw@redis:6379/0")
		}, "has a password"},
		{"plaintext allowed", func(p *types.Project) {
			p.Services["vigil-1"].Environment["VIGIL_REDIS_INSECURE_PLAINTEXT"] = new("true")
		}, "VIGIL_REDIS_INSECURE_PLAINTEXT"},
		{"a plain port", func(p *types.Project) {
			s := p.Services["redis"]
			s.Command = slices.Clone(s.Command)
			s.Command[slices.Index(s.Command, "--port")+1] = "6380"
			p.Services["redis"] = s
		}, "--port 0"},
		{"the default user on", func(p *types.Project) {
			s := p.Services["redis"]
			s.Entrypoint = []string{strings.ReplaceAll(strings.Join(s.Entrypoint, "\n"), "user default off", "user default on nopass")}
			p.Services["redis"] = s
		}, "default user off"},
		{"another ACL", func(p *types.Project) {
			p.Services["redis"].Environment["VIGIL_ACL"] = new(tested + " +flushall")
		}, "is not the rule the tests run Vigil under"},
	} {
		t.Run(m.name, func(t *testing.T) {
			p := loadSharedCompose(t)
			m.mutate(p)
			assert.ErrorContains(t, checkComposeSharedRedis(p, tested), m.wantErr)
		})
	}
}

// sharedOverlay builds deploy/k8s-shared and returns vigil's Deployment
// and Redis's StatefulSet.
func sharedOverlay(t *testing.T) (*appsv1.Deployment, *appsv1.StatefulSet) {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), repoPath(t, kustomizeSharedDir))
	require.NoError(t, err)
	dec := strictDecoder(t)
	var d *appsv1.Deployment
	var s *appsv1.StatefulSet
	for _, r := range resMap.Resources() {
		doc, err := r.AsYAML()
		require.NoError(t, err)
		obj, err := decodeStrict(t, dec, doc)
		require.NoError(t, err)
		switch o := obj.(type) {
		case *appsv1.Deployment:
			d = o
		case *appsv1.StatefulSet:
			s = o
		}
	}
	require.NotNil(t, d)
	require.NotNil(t, s)
	return d, s
}

// secretEnv returns the Secret name and key a variable comes from, or "".
func secretEnv(c corev1.Container, name string) (string, string, string) {
	for _, e := range c.Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key, ""
		}
		return "", "", e.Value
	}
	return "", "", ""
}

// checkK8sSharedRedis checks deploy/k8s-shared's Redis and how vigil
// reaches it.
func checkK8sSharedRedis(d *appsv1.Deployment, s *appsv1.StatefulSet, tested string) error {
	var errs []error
	pod := s.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 1 {
		return errors.New("vigil-redis: want one container and the ACL file's init container")
	}
	errs = append(errs, checkRedisServerArgs(pod.Containers[0].Args))
	initC := pod.InitContainers[0]
	_, _, rule := secretEnv(initC, "VIGIL_ACL")
	errs = append(errs, checkACLScript(strings.Join(initC.Command, "\n"), rule, tested))
	redisSecret, redisKey, _ := secretEnv(initC, "REDIS_PASSWORD")
	if redisSecret == "" {
		errs = append(errs, errors.New("vigil-redis: REDIS_PASSWORD does not come from a Secret"))
	}

	var vigil corev1.Container
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "vigil" {
			vigil = c
		}
	}
	_, _, u := secretEnv(vigil, "VIGIL_REDIS_URL")
	errs = append(errs, checkRedisURL("vigil", u))
	if name, key, _ := secretEnv(vigil, "VIGIL_REDIS_PASSWORD"); name == "" || name != redisSecret || key != redisKey {
		errs = append(errs, errors.New("vigil: VIGIL_REDIS_PASSWORD does not come from the Secret key Redis's password comes from"))
	}
	if _, _, v := secretEnv(vigil, "VIGIL_REDIS_INSECURE_PLAINTEXT"); v != "" {
		errs = append(errs, errors.New("vigil: VIGIL_REDIS_INSECURE_PLAINTEXT"))
	}
	// VIGIL_REDIS_CA is ca.crt of the Secret Redis's certificate is in,
	// and only that key of it.
	_, _, ca := secretEnv(vigil, "VIGIL_REDIS_CA")
	var tlsSecret string
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			tlsSecret = v.Secret.SecretName
		}
	}
	var caOK bool
	for _, m := range vigil.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != m.Name || v.Secret == nil || v.Secret.SecretName != tlsSecret || !m.ReadOnly {
				continue
			}
			caOK = len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "ca.crt" && ca == m.MountPath+"/"+v.Secret.Items[0].Path
		}
	}
	if tlsSecret == "" || !caOK {
		errs = append(errs, fmt.Errorf("vigil: VIGIL_REDIS_CA %q is not ca.crt (alone) of Redis's TLS Secret %q, mounted read-only", ca, tlsSecret))
	}
	return errors.Join(errs...)
}

// TestKubernetesSharedRedisTLS checks deploy/k8s-shared's Redis, then
// shows that each check fails on objects mutated to break it.
func TestKubernetesSharedRedisTLS(t *testing.T) {
	tested := testedRedisACL(t)
	d, s := sharedOverlay(t)
	require.NoError(t, checkK8sSharedRedis(d, s, tested))

	vigilEnv := func(d *appsv1.Deployment, name string) *corev1.EnvVar {
		for i, c := range d.Spec.Template.Spec.Containers {
			for j, e := range c.Env {
				if c.Name == "vigil" && e.Name == name {
					return &d.Spec.Template.Spec.Containers[i].Env[j]
				}
			}
		}
		t.Fatalf("no %s", name)
		return nil
	}
	for _, m := range []struct {
		name    string
		mutate  func(*appsv1.Deployment, *appsv1.StatefulSet)
		wantErr string
	}{
		{"plain redis://", func(d *appsv1.Deployment, _ *appsv1.StatefulSet) {
			vigilEnv(d, "VIGIL_REDIS_URL").Value = "redis://vigil@vigil-redis:6379/0"
		}, "is not rediss://"},
		{"password as a plain value", func(d *appsv1.Deployment, _ *appsv1.StatefulSet) {
			*vigilEnv(d, "VIGIL_REDIS_PASSWORD") = corev1.EnvVar{Name: "VIGIL_REDIS_PASSWORD", Value: "pw"}
		}, "VIGIL_REDIS_PASSWORD does not come from the Secret key"},
		{"the whole TLS Secret mounted", func(d *appsv1.Deployment, _ *appsv1.StatefulSet) {
			for i, v := range d.Spec.Template.Spec.Volumes {
				if v.Secret != nil && v.Secret.SecretName == "vigil-redis-tls" {
					d.Spec.Template.Spec.Volumes[i].Secret.Items = nil
				}
			}
		}, "is not ca.crt (alone)"},
		{"a plain port", func(_ *appsv1.Deployment, s *appsv1.StatefulSet) {
			c := &s.Spec.Template.Spec.Containers[0]
			c.Args = slices.DeleteFunc(slices.Clone(c.Args), func(a string) bool { return a == "--port" || a == "0" })
		}, "--port 0"},
		{"the default user on", func(_ *appsv1.Deployment, s *appsv1.StatefulSet) {
			c := &s.Spec.Template.Spec.InitContainers[0]
			c.Command = []string{strings.ReplaceAll(strings.Join(c.Command, "\n"), "user default off", "user default on nopass")}
		}, "default user off"},
		{"a password on redis-server's command line", func(_ *appsv1.Deployment, s *appsv1.StatefulSet) {
			c := &s.Spec.Template.Spec.Containers[0]
			c.Args = append(slices.Clone(c.Args), "--requirepass", "pw")
		}, "no password on the command line"},
	} {
		t.Run(m.name, func(t *testing.T) {
			d, s := sharedOverlay(t)
			m.mutate(d, s)
			assert.ErrorContains(t, checkK8sSharedRedis(d, s, tested), m.wantErr)
		})
	}
}

// TestRedisTLSScript runs deploy/redis-tls.sh (with Debian's openssl): the
// certificate it makes chains to its CA for the kits' Redis names, with
// an ECDSA key, and the keys and the password are readable by their owner
// only.
func TestRedisTLSScript(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is not on PATH: apt-get install openssl")
	}
	dir := filepath.Join(t.TempDir(), "redis-tls")
	out, err := exec.CommandContext(t.Context(), repoPath(t, "deploy/redis-tls.sh"), dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	parse := func(name string) *x509.Certificate {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		block, _ := pem.Decode(b)
		require.NotNil(t, block, name)
		c, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		return c
	}
	ca, leaf := parse("ca.crt"), parse("tls.crt")
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, host := range []string{"redis", "redis-replica", "sentinel-1", "sentinel-2", "sentinel-3", "vigil-redis"} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host})
		require.NoError(t, err, host)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: x509.NewCertPool(), DNSName: "redis"})
	require.Error(t, err, "only its own CA")
	assert.Equal(t, x509.ECDSA, leaf.PublicKeyAlgorithm)
	for _, name := range []string{"ca.key", "tls.key", "redis-password", "redis-internal-password"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	pw, err := os.ReadFile(filepath.Join(dir, "redis-password"))
	require.NoError(t, err)
	assert.Regexp(t, `^[A-Za-z0-9_-]{40,}$`, string(pw))
}
