package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// MasterName is the name the Sentinels of StartSentinels give the primary.
const MasterName = "vigil"

// StartReplica starts a redis-server for t that replicates primary (plain
// TCP, as Start), and waits until its link to primary is up.
func StartReplica(t testing.TB, primary *Server) *Server {
	t.Helper()
	host, port := splitAddr(primary.Addr())
	s := startServer(t, false, "--replicaof", host, port)
	c := s.Client(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.Info(t.Context(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica of %s: link not up within 10s: %v", primary.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond) // no event to wait on: the replica's sync
	}
}

// StartSentinels starts n Sentinels for t (redis-server --sentinel, the
// binary of Debian's redis-sentinel) watching primary as MasterName, with
// a quorum of n/2+1, a primary deemed down after downAfter without an
// answer, and waits until each knows the primary, its replicas (how
// many: replicas) and the other Sentinels.
func StartSentinels(t testing.TB, primary *Server, n, replicas int, downAfter time.Duration) []*Server {
	t.Helper()
	host, port := splitAddr(primary.Addr())
	var ss []*Server
	for range n {
		conf := func(p int, dir string) string {
			return fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s %s %s %d\n"+
				"sentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 1\n",
				p, dir, MasterName, host, port, n/2+1, MasterName, downAfter.Milliseconds(), MasterName, MasterName)
		}
		ss = append(ss, startWith(t, false, conf, []string{"--sentinel", "--save", "", "--appendonly", "no"}))
	}
	for _, s := range ss {
		c := s.Client(t)
		deadline := time.Now().Add(10 * time.Second)
		for {
			peers, err := c.Do(t.Context(), "SENTINEL", "SENTINELS", MasterName).Slice()
			if err == nil && len(peers) == n-1 {
				var reps []any
				if reps, err = c.Do(t.Context(), "SENTINEL", "REPLICAS", MasterName).Slice(); err == nil && len(reps) == replicas {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("sentinel %s: does not see the primary and %d other Sentinels within 10s: %v", s.Addr(), n-1, err)
			}
			time.Sleep(20 * time.Millisecond) // no event to wait on: the Sentinels' discovery
		}
	}
	return ss
}

// MasterAddr returns the primary's address as the Sentinel s names it.
func MasterAddr(ctx context.Context, s *Server) (string, error) {
	c := redis.NewSentinelClient(s.adminOptions())
	defer func() { _ = c.Close() }()
	a, err := c.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		return "", err
	}
	return a[0] + ":" + a[1], nil
}

// StartClusterNode starts a redis-server for t in cluster mode, alone
// (no slots): a node that says it is a Cluster's. A node deems another
// failed after a second without an answer (cluster-node-timeout), so
// that a Cluster of StartCluster fails over within seconds.
func StartClusterNode(t testing.TB) *Server {
	t.Helper()
	return startServer(t, false, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000")
}

func splitAddr(addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	return addr[:i], addr[i+1:]
}

// StartCluster starts n redis-servers for t in cluster mode and joins
// them into one Cluster of n primaries (redis-cli --cluster create), each
// serving its share of the slots; it waits until the Cluster is ok.
func StartCluster(t testing.TB, n int) []*Server {
	t.Helper()
	return StartClusterWithReplicas(t, n, 0)
}

// StartClusterWithReplicas starts a Cluster of primaries, each with
// replicas of its own (redis-cli --cluster create --cluster-replicas), and
// waits until the Cluster is ok and every replica's link to its primary
// is up. Which nodes are primaries is the Cluster's to say (ROLE).
func StartClusterWithReplicas(t testing.TB, primaries, replicas int) []*Server {
	t.Helper()
	testkit.External(t, "redis-cli")
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed; make test installs it")
	}
	nodes := make([]*Server, primaries*(1+replicas))
	args := []string{"--cluster", "create"}
	for i := range nodes {
		nodes[i] = StartClusterNode(t)
		args = append(args, nodes[i].Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, s := range nodes {
		c := s.Client(t)
		deadline := time.Now().Add(10 * time.Second)
		for {
			info, err := c.ClusterInfo(t.Context()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				var repl string
				if repl, err = c.Info(t.Context(), "replication").Result(); err == nil &&
					(strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up")) {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s: not ok within 10s: %v", s.Addr(), err)
			}
			time.Sleep(20 * time.Millisecond) // no event to wait on: the nodes' gossip
		}
	}
	return nodes
}

// StartSentinelNaming starts one Sentinel for t that watches primary as
// MasterName by the name host (sentinel resolve-hostnames and
// announce-hostnames), so that it names the primary host:port, not an IP,
// as a Sentinel of a primary on another host does; host must resolve, on
// this machine, to primary's address (LoopbackHostname). It waits until
// the Sentinel names the primary.
func StartSentinelNaming(t testing.TB, primary *Server, host string) *Server {
	t.Helper()
	_, port := splitAddr(primary.Addr())
	conf := func(p int, dir string) string {
		return fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel resolve-hostnames yes\nsentinel announce-hostnames yes\nsentinel monitor %s %s %s 1\n",
			p, dir, MasterName, host, port)
	}
	s := startWith(t, false, conf, []string{"--sentinel", "--save", "", "--appendonly", "no"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		addr, err := MasterAddr(t.Context(), s)
		if err == nil && addr == net.JoinHostPort(host, port) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel %s: does not name the primary %s:%s within 10s: %q, %v", s.Addr(), host, port, addr, err)
		}
		time.Sleep(20 * time.Millisecond) // no event to wait on: the Sentinel's first look at the primary
	}
}

// LoopbackHostname returns a name of this machine that /etc/hosts maps
// to 127.0.0.1 only (the host's own name, on most systems), so that a
// test can name a host that is not "localhost" with nothing leaving the
// machine; it skips t when there is none. It asks no DNS server.
func LoopbackHostname(t testing.TB) string {
	t.Helper()
	name, err := os.Hostname()
	if err != nil || name == "" || strings.EqualFold(name, "localhost") {
		t.Skip("no host name")
	}
	hosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Skip("no /etc/hosts")
	}
	found := false
	for line := range strings.SplitSeq(string(hosts), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) < 2 || !slices.ContainsFunc(fields[1:], func(f string) bool { return strings.EqualFold(f, name) }) {
			continue
		}
		if fields[0] != "127.0.0.1" {
			t.Skipf("/etc/hosts maps %s to %s, not only to 127.0.0.1", name, fields[0])
		}
		found = true
	}
	if !found {
		t.Skipf("/etc/hosts does not map %s to 127.0.0.1", name)
	}
	return name
}
