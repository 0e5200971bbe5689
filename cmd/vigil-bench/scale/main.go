package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// version is the protocol version of every session the phases open.
const version = protocol.Version20250618

// config is what the flags select.
type config struct {
	vigil, floor   target
	phase          string
	sessions       int           // streams: sessions, each with its GET stream
	fanouts        int           // streams: list_changed fan-outs
	settle         time.Duration // streams: wait before each RSS reading
	clients        []int         // overload: concurrency levels, distinct, the first the peak's
	reps           int           // overload: reps honoring Retry-After
	round          time.Duration // overload and payload: length of a round
	payloadBytes   int
	payloadClients int
	heavyCallers   int // callers: how many heavy callers
	heavyClients   int // callers: each heavy caller's clients
	lightClients   int // callers: the light caller's clients
}

// target is one server under load.
type target struct {
	name string
	url  string
	pid  int
}

func main() {
	var cfg config
	var clients string
	flag.StringVar(&cfg.floor.url, "floor", "", "`URL` of the floor's MCP endpoint")
	flag.IntVar(&cfg.floor.pid, "floor-pid", 0, "`pid` of the floor's process")
	flag.StringVar(&cfg.vigil.url, "vigil", "", "`URL` of vigil's MCP endpoint")
	flag.IntVar(&cfg.vigil.pid, "vigil-pid", 0, "`pid` of vigil's process")
	flag.StringVar(&cfg.phase, "phase", "", "the phase to run: streams, overload, payload or callers")
	flag.IntVar(&cfg.sessions, "sessions", 10000, "streams: sessions, each with its standalone GET stream open")
	flag.IntVar(&cfg.fanouts, "fanouts", 20, "streams: list_changed fan-outs")
	flag.DurationVar(&cfg.settle, "settle", 2*time.Second, "streams: how long to wait before each RSS reading")
	flag.StringVar(&clients, "clients", "32,512,2048", "overload: comma-separated concurrency levels; the first is the peak the others are compared with")
	flag.IntVar(&cfg.reps, "reps", 3, "overload: reps honoring Retry-After, in each of which a server runs its rounds at every level back to back, the peak's included; each level is compared with the same rep's peak")
	flag.DurationVar(&cfg.round, "round", 5*time.Second, "overload and payload: length of a round")
	flag.IntVar(&cfg.payloadBytes, "payload-bytes", 1<<20, "payload: `bytes` of the echo's text")
	flag.IntVar(&cfg.payloadClients, "payload-clients", 8, "payload: concurrent clients")
	flag.IntVar(&cfg.heavyCallers, "heavy-callers", 4, "callers: heavy callers (from 127.0.0.1, then 127.0.0.3 on)")
	flag.IntVar(&cfg.heavyClients, "heavy-clients", 400, "callers: each heavy caller's clients (within vigil's default in-flight quota of 512)")
	flag.IntVar(&cfg.lightClients, "light-clients", 32, "callers: the light caller's clients (from 127.0.0.2)")
	flag.Parse()
	cfg.vigil.name, cfg.floor.name = "vigil", "floor"
	err := cfg.parseClients(clients)
	if err == nil {
		err = run(os.Stdout, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// parseClients sets cfg.clients from a comma-separated list of distinct
// positive numbers.
func (cfg *config) parseClients(list string) error {
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || slices.Contains(cfg.clients, n) {
			return fmt.Errorf("-clients %q: want distinct positive numbers", list)
		}
		cfg.clients = append(cfg.clients, n)
	}
	return nil
}

// run runs cfg.phase and writes its report to w.
func run(w io.Writer, cfg config) error {
	if cfg.floor.url == "" || cfg.vigil.url == "" || cfg.floor.pid <= 0 || cfg.vigil.pid <= 0 {
		return errors.New("-floor, -floor-pid, -vigil and -vigil-pid are required")
	}
	switch cfg.phase {
	case "streams":
		if cfg.sessions <= 0 || cfg.fanouts <= 0 {
			return errors.New("-sessions and -fanouts must be positive")
		}
		return streams(w, cfg)
	case "overload":
		if cfg.round <= 0 || cfg.reps <= 0 {
			return errors.New("-round and -reps must be positive")
		}
		return overload(w, cfg)
	case "payload":
		if cfg.round <= 0 || cfg.payloadBytes <= 0 || cfg.payloadClients <= 0 {
			return errors.New("-round, -payload-bytes and -payload-clients must be positive")
		}
		return payload(w, cfg)
	case "callers":
		if cfg.round <= 0 || cfg.heavyCallers <= 0 || cfg.heavyCallers > 250 || cfg.heavyClients <= 0 || cfg.lightClients <= 0 {
			return errors.New("-round, -heavy-callers (at most 250), -heavy-clients and -light-clients must be positive")
		}
		return callers(w, cfg)
	}
	return fmt.Errorf("-phase %q: want streams, overload, payload or callers", cfg.phase)
}

// newTable returns a right-aligned table writer on w.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// verdict writes a line "PASS  what" or "FAIL  what": cmd/vigil-bench
// gathers these lines into the run's summary.
func verdict(w io.Writer, pass bool, format string, args ...any) {
	word := "FAIL"
	if pass {
		word = "PASS"
	}
	_, _ = fmt.Fprintf(w, "%s  %s\n", word, fmt.Sprintf(format, args...))
}

// kib formats bytes in kibibytes with one decimal.
func kib(bytes float64) string { return fmt.Sprintf("%.1f KiB", bytes/1024) }
