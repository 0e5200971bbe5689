// Package catalogfile reads vigil's -catalog file, the operator's catalog
// of package gateway, with its lock (-catalog-lock), reads them again on
// SIGHUP, and writes the lock (-catalog-lock-write).
package catalogfile

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vigil-mcp/vigil/gateway"
)

// maxFile bounds the bytes of the file read (gateway.ParseCatalog refuses
// more than 4 MiB; one more byte tells it so).
const maxFile = 4<<20 + 1

// Flags are vigil's -catalog, -catalog-lock, -catalog-lock-write and
// -catalog-search.
type Flags struct {
	File   string // -catalog: the catalog file
	Lock   string // -catalog-lock: its lock file, the approved definitions of pinned upstreams
	Write  bool   // -catalog-lock-write: write the lock of what the upstreams serve, and exit
	Search bool   // -catalog-search: search_tools and call_tool instead of the tools (gateway.Config.Search)
}

// Register registers the flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.File, "catalog", "", "serve the upstreams' tools and prompts as the YAML `FILE` says (renamed, described, hidden, arguments fixed or defaulted, pinned), its named endpoints at /mcp/NAME and what /mcp serves (nothing beside endpoints with scopes, unless its default key says); read again on SIGHUP, a bad file logged with its line and the catalog in force kept (see docs/gateway.md)")
	fs.StringVar(&f.Lock, "catalog-lock", "", "hold the tools of the upstreams the catalog pins (pin: warn or hold) to the definitions the lock `FILE` approved (written by -catalog-lock-write); read again on SIGHUP with the catalog")
	fs.BoolVar(&f.Write, "catalog-lock-write", false, "approve: once every upstream is ready, write the -catalog-lock file of the definitions the pinned upstreams serve now, and exit")
	fs.BoolVar(&f.Search, "catalog-search", false, "list two tools instead of the upstreams' (search_tools finds the best few of them for a query, BM25 in process; call_tool calls one by its name, as a call of that tool in every respect); see docs/gateway.md, \"Search instead of the full list\"")
}

// Check refuses the lock flags without -catalog, and -catalog-lock-write
// without -catalog-lock.
func (f *Flags) Check() error {
	switch {
	case f.Lock != "" && f.File == "":
		return errors.New("-catalog-lock: need -catalog")
	case f.Write && f.Lock == "":
		return errors.New("-catalog-lock-write: need -catalog-lock")
	}
	return nil
}

// Load reads and parses the catalog file, with its lock when there is
// one (a lock file that does not exist yet approves nothing); nil
// without -catalog. Its errors name the file and the line.
func (f *Flags) Load() (*gateway.Catalog, error) {
	if f.File == "" {
		return nil, nil
	}
	data, err := readFile(f.File)
	if err != nil {
		return nil, fmt.Errorf("-catalog: %w", err)
	}
	c, err := gateway.ParseCatalog(data)
	if err != nil {
		return nil, fmt.Errorf("-catalog %s: %w", f.File, err)
	}
	if f.Lock == "" {
		return c, nil
	}
	lock, err := readFile(f.Lock)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("-catalog-lock: %w", err)
	}
	if c, err = c.WithLock(lock); err != nil {
		return nil, fmt.Errorf("-catalog-lock %s: %w", f.Lock, err)
	}
	return c, nil
}

// readFile reads path, up to maxFile bytes.
func readFile(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }()
	return io.ReadAll(io.LimitReader(file, maxFile))
}

// ErrLockWritten ends vigil -catalog-lock-write once the lock is written.
var ErrLockWritten = errors.New("catalog lock written")

// WriteLock waits, until ctx is done, for every upstream of g to be
// ready, then writes the lock of what the pinned upstreams serve to the
// -catalog-lock file (by a rename: a reader never sees half of it) and
// returns ErrLockWritten.
func (f *Flags) WriteLock(ctx context.Context, g *gateway.Gateway) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for g.Health() != nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("-catalog-lock-write: the upstreams are not ready: %w", g.Health())
		}
	}
	tmp := f.Lock + ".new"
	if err := os.WriteFile(tmp, g.Lock(), 0o600); err != nil {
		return fmt.Errorf("-catalog-lock-write: %w", err)
	}
	if err := os.Rename(tmp, f.Lock); err != nil {
		return fmt.Errorf("-catalog-lock-write: %w", err)
	}
	return ErrLockWritten
}

// ReloadOnHUP reads the catalog file and its lock again at each SIGHUP until
// ctx is done or stop is called, and has g serve it: sessions live on. A
// file that cannot be read or is refused is logged with its line, and the
// catalog in force stays. It returns once it listens for SIGHUP; with no
// path it does nothing.
func (f *Flags) ReloadOnHUP(ctx context.Context, g *gateway.Gateway, logger *slog.Logger) (stop func()) {
	if f.File == "" {
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
				f.Reload(g, logger)
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

// Reload reads the catalog file and its lock again and has g serve them;
// a file that cannot be read or is refused is logged, and the catalog in
// force stays.
func (f *Flags) Reload(g *gateway.Gateway, logger *slog.Logger) {
	c, err := f.Load()
	if err == nil {
		err = g.SetCatalog(c)
	}
	if err != nil {
		logger.Error("catalog refused: the catalog in force stays", "error", err)
		return
	}
	logger.Info("catalog reloaded", "file", f.File, "lock", f.Lock)
}

// EndpointsPath is where the catalog's named endpoints are served:
// EndpointsPath+NAME.
const EndpointsPath = "/mcp/"

// WithEndpoints returns public (the paths served besides /mcp) with the
// catalog's named endpoints, /mcp/NAME, served by h.
func WithEndpoints(public map[string]http.Handler, h http.Handler) map[string]http.Handler {
	out := map[string]http.Handler{EndpointsPath: h}
	maps.Copy(out, public)
	return out
}
