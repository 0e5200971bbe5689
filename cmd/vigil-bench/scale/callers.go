package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
	"github.com/vigil-mcp/vigil/internal/loadgen"
)

// The callers of the callers phase: loopback addresses, each its own
// caller for vigil's quotas and its shedding; the light one's, then the
// heavy ones' from 127.0.0.1 on, skipping it.
const lightAddr = "127.0.0.2"

// heavyAddr returns the address of heavy caller i.
func heavyAddr(i int) string {
	if i == 0 {
		return "127.0.0.1"
	}
	return fmt.Sprintf("127.0.0.%d", i+2)
}

// maxLightRefused is the most of the light caller's requests the callers
// phase lets vigil refuse.
const maxLightRefused = 0.001

// callers runs the callers phase and writes its report to w:
// cfg.heavyCallers heavy callers (cfg.heavyClients clients each, ignoring
// Retry-After, each within vigil's default quotas) and a light one
// (cfg.lightClients clients from lightAddr, honoring it) call echo on
// vigil at once, each in sessions of its own, for cfg.round after a
// warm-up; vigil sheds, and must refuse the heavy callers, not the light
// one.
func callers(w io.Writer, cfg config) error {
	_, _ = fmt.Fprintf(w, "\ncallers      tools/call echo on vigil, %d callers at once, keep-alive, %s sessions (one per %d clients), %s:\n", cfg.heavyCallers+1, version, clientsPerSession, cfg.round)
	_, _ = fmt.Fprintf(w, "             heavy: %d callers of %d clients each from %s on, ignoring Retry-After; light: %d clients from %s honoring it\n",
		cfg.heavyCallers, cfg.heavyClients, heavyAddr(0), cfg.lightClients, lightAddr)
	type caller struct {
		name, from string
		clients    int
		honor      bool
		sids       []string
		r          overloadRound
	}
	cs := []*caller{{name: "light", from: lightAddr, clients: cfg.lightClients, honor: true}}
	for i := range cfg.heavyCallers {
		cs = append(cs, &caller{name: "heavy@" + heavyAddr(i), from: heavyAddr(i), clients: cfg.heavyClients})
	}
	for _, c := range cs {
		client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(c.from)}}).DialContext}}
		for range (c.clients + clientsPerSession - 1) / clientsPerSession {
			sid, err := loadgen.OpenSession(client, cfg.vigil.url, version)
			if err != nil {
				return fmt.Errorf("%s caller: %w", c.name, err)
			}
			c.sids = append(c.sids, sid)
		}
		client.CloseIdleConnections()
	}
	for _, d := range []bool{false, true} { // a warm-up, then the round
		length := warmup(cfg)
		if d {
			length = cfg.round
		}
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Go(func() { c.r = runOverload(cfg.vigil, c.sids, c.clients, c.honor, length, c.from) })
		}
		wg.Wait()
	}
	tw := newTable(w)
	_, _ = fmt.Fprintf(tw, "caller\tclients\tgoodput/s\tp99\trefused/s\trefused\tfailed\t\n")
	for _, c := range cs {
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.0f\t%s\t%d\t\n", c.name, c.clients, benchservice.Thousands(int64(c.r.goodput())),
			benchservice.Millis(c.r.p99()), float64(c.r.refused)/c.r.elapsed.Seconds(), percent(c.r.refused, c.r.ok+c.r.refused), c.r.failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range cs {
		if c.r.firstFail != "" {
			_, _ = fmt.Fprintf(w, "first failure %s: %s\n", c.name, c.r.firstFail)
		}
	}
	light := cs[0].r
	var heavy overloadRound
	for _, c := range cs[1:] {
		heavy.ok += c.r.ok
		heavy.refused += c.r.refused
	}
	_, _ = fmt.Fprintf(w, "shedding     the heavy callers were refused %s of their requests: ", percent(heavy.refused, heavy.ok+heavy.refused))
	if heavy.refused == 0 {
		_, _ = fmt.Fprintf(w, "vigil did not shed, and the round says nothing of fairness\n")
	} else {
		_, _ = fmt.Fprintf(w, "vigil shed\n")
	}
	verdict(w, float64(light.refused) < maxLightRefused*float64(light.ok+light.refused) && light.failed == 0,
		"callers: the light caller's refusals %s of its requests (< %.1f%%) while heavy ones within quota load vigil", percent(light.refused, light.ok+light.refused), 100*maxLightRefused)
	return nil
}

// percent formats n of total as a percentage with two decimals.
func percent(n, total int64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(total))
}
