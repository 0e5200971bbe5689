package redisshare_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigil-mcp/vigil/redisshare"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// One replica of a service whose sessions live on Redis: every replica
// runs the same, with the same cluster key. (Not run: it needs a Redis.)
func Example() {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	key, err := base64.StdEncoding.DecodeString(os.Getenv("VIGIL_CLUSTER_KEY"))
	if err != nil {
		slog.Error("VIGIL_CLUSTER_KEY", "error", err)
		return
	}
	shared, err := redisshare.Open(ctx, redisshare.Config{
		URL:        "rediss://vigil@redis:6379/0",
		Password:   os.Getenv("VIGIL_REDIS_PASSWORD"),
		ClusterKey: key,
		Logger:     slog.Default(),
		Registerer: reg,
	})
	if err != nil {
		slog.Error("shared mode", "error", err)
		return
	}
	defer func() { _ = shared.Close() }()

	srv := server.New(shared.ServerOptions()...)
	defer func() { _ = srv.Close() }()
	endpoint := streamable.New(srv, append([]streamable.Option{
		streamable.WithIdleTimeout(30 * time.Minute), // the sessions' in Redis too
		streamable.WithQuotas(streamable.Quotas{Sessions: 10, SessionCounter: shared.SessionQuota(10)}),
	}, shared.Options()...)...)
	defer func() { endpoint.Drain(); _ = endpoint.Close() }()

	mux := http.NewServeMux()
	mux.Handle("/mcp", endpoint)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !shared.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	hs := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	slog.Error("serving", "error", hs.ListenAndServe())
}

// Plain text to a Redis that is not on loopback is refused before any
// connection: anyone on the path would read the sessions and the password.
func ExampleOpen_plaintext() {
	_, err := redisshare.Open(context.Background(), redisshare.Config{URL: "redis://10.0.0.7:6379/0"})
	fmt.Println(err)
	// Output:
	// -redis 10.0.0.7:6379/0: redis:// has no TLS, so anyone on the path to a Redis that is not on loopback reads the sessions and the password: use rediss://, or pass -redis-insecure-plaintext
}

// The metrics of the shared mode, each label value created, as a replica
// has them from its start.
func ExampleRegisterMetrics() {
	reg := prometheus.NewRegistry()
	if err := redisshare.RegisterMetrics(reg); err != nil {
		fmt.Println(err)
		return
	}
	families, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Println(n)
	}
	// Output:
	// mcp_server_ratelimit_fallbacks_total
	// mcp_server_redis_connections_refused_total
	// mcp_server_redis_errors_total
	// mcp_server_redis_operation_duration_seconds
	// mcp_server_redis_up
	// mcp_server_relays_refused_total
	// mcp_server_relays_total
	// mcp_server_requests_lost_total
}
