package redisstore_test

import (
	"context"
	"encoding/base64"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Each replica of a service opens its own Store on the same Redis and
// gives it to its endpoint as the cluster: any replica then serves any
// request of any 2025-era session. A service does this, and the rest of
// the wiring (the Store as the shared event store too, so that any replica
// resumes any stream), with package redisshare. (Not run: it needs a Redis
// at localhost:6379.)
func Example() {
	if err := serveShared(context.Background(), "localhost:6379"); err != nil {
		log.Print(err)
	}
}

// serveShared serves one replica of a service whose sessions live on the
// Redis at addr.
func serveShared(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = rdb.Close() }()
	// The cluster key: the same random bytes on every replica, from a Secret.
	key, err := base64.StdEncoding.DecodeString(os.Getenv("VIGIL_CLUSTER_KEY"))
	if err != nil {
		return err
	}
	store, err := redisstore.New(ctx, rdb, redisstore.WithClusterKey(key, nil)) // a random replica name; WithReplica names it
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()

	srv := server.New(server.WithImplementation("example", "1.0"))
	h := streamable.New(srv, streamable.WithCluster(store))
	hs := &http.Server{Addr: "127.0.0.1:8080", Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return hs.ListenAndServe()
}
