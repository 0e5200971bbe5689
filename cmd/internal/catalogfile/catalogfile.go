// Package catalogfile reads vigil's -catalog file, the operator's catalog
// of package gateway, and reads it again on SIGHUP.
package catalogfile

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/vigil-mcp/vigil/gateway"
)

// maxFile bounds the bytes of the file read (gateway.ParseCatalog refuses
// more than 4 MiB; one more byte tells it so).
const maxFile = 4<<20 + 1

// Load reads and parses the catalog file at path; its errors name the
// file and the line.
func Load(path string) (*gateway.Catalog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-catalog: %w", err)
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxFile))
	if err != nil {
		return nil, fmt.Errorf("-catalog %s: %w", path, err)
	}
	c, err := gateway.ParseCatalog(data)
	if err != nil {
		return nil, fmt.Errorf("-catalog %s: %w", path, err)
	}
	return c, nil
}

// ReloadOnHUP reads the catalog file at path again at each SIGHUP until
// ctx is done or stop is called, and has g serve it: sessions live on. A
// file that cannot be read or is refused is logged with its line, and the
// catalog in force stays. It returns once it listens for SIGHUP; with no
// path it does nothing.
func ReloadOnHUP(ctx context.Context, path string, g *gateway.Gateway, logger *slog.Logger) (stop func()) {
	if path == "" {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-hup:
				Reload(path, g, logger)
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

// Reload reads the catalog file at path and has g serve it; a file that
// cannot be read or is refused is logged, and the catalog in force stays.
func Reload(path string, g *gateway.Gateway, logger *slog.Logger) {
	c, err := Load(path)
	if err == nil {
		err = g.SetCatalog(c)
	}
	if err != nil {
		logger.Error("catalog refused: the catalog in force stays", "error", err)
		return
	}
	logger.Info("catalog reloaded", "file", path)
}

// WithEndpoints returns public (the paths served besides /mcp) with the
// catalog's named endpoints, /mcp/NAME, served by h.
func WithEndpoints(public map[string]http.Handler, h http.Handler) map[string]http.Handler {
	out := map[string]http.Handler{"/mcp/": h}
	maps.Copy(out, public)
	return out
}
