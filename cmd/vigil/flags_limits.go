package main

import (
	"errors"
	"flag"
	"time"

	"github.com/vigil-mcp/vigil/internal/gcheadroom"
	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/stdio"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// limitFlags bound what vigil holds and how long it waits: message and
// body sizes, sessions and requests in flight, timeouts of requests,
// sessions, connections and streams, results, what a shared session
// stores, and the heap's headroom.
type limitFlags struct{}

func (limitFlags) register(fs *flag.FlagSet, cfg *config) {
	fs.IntVar(&cfg.maxFrame, "max-frame", stdio.DefaultMaxFrameSize, "largest stdio message accepted, in `bytes`")
	fs.Int64Var(&cfg.maxBody, "max-body", 4<<20, "largest HTTP request body accepted, in `bytes`")
	fs.IntVar(&cfg.maxSessions, "max-sessions", 10000, "most concurrent HTTP sessions (2025 protocol versions); more initializes get 503")
	fs.IntVar(&cfg.maxInFlight, "max-in-flight", 256, "most requests in flight per session; more are refused as busy")
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", 30*time.Minute, "end an HTTP session that has seen no request for this long (0: never; with -redis, its record still expires after 30m)")
	fs.DurationVar(&cfg.requestTimeout, "request-timeout", time.Minute, "how long one request's handler may run before it is cancelled and answered -32001 (0: no limit)")
	fs.IntVar(&cfg.toolConcurrency, "tool-concurrency", 256, "most concurrent calls of each tool, over all sessions; a call over it waits up to 1s for a slot, then is answered -32000 busy (0: no limit)")
	fs.DurationVar(&cfg.listChangedDelay, "list-changed-delay", server.DefaultListChangedDelay, "how long vigil waits after a change to its tools, resources or prompts before it sends list_changed to every session, coalescing the changes in between into one notification (0: one per change, at once)")
	fs.IntVar(&cfg.maxResultBytes, "max-result-bytes", server.DefaultMaxResultBytes, "largest encoded result of tools/call, resources/read, prompts/get or completion/complete, in `bytes`; a larger one is answered as an error saying so, a tool's as a tool error (0: no limit; a skill file is bounded by the skills' limits instead)")
	fs.IntVar(&cfg.gcHeadroomMiB, "gc-headroom", gcheadroom.DefaultHeadroomMiB, gcheadroom.FlagUsage)
	fs.DurationVar(&cfg.httpIdleTimeout, "http-idle-timeout", 2*time.Minute, "close a keep-alive HTTP connection idle for this long (MCP and admin listeners)")
	fs.DurationVar(&cfg.bodyReadTimeout, "body-read-timeout", 30*time.Second, "close an HTTP connection whose request body does not arrive within this (0: no limit)")
	fs.DurationVar(&cfg.sseWriteTimeout, "sse-write-timeout", streamable.DefaultWriteTimeout, "end an SSE stream whose client does not take one event within this; the session lives on")
	fs.IntVar(&cfg.maxResumptions, "max-resumptions", streamable.DefaultMaxResumptions, "most GET streams (the standalone stream and resumptions) one HTTP session has open at once; more get 429")
	fs.DurationVar(&cfg.initTimeout, "init-timeout", streamable.DefaultInitTimeout, "end an HTTP session whose client has not finished initialize and that has seen no request for this long")
	fs.IntVar(&cfg.maxSessionState, "max-session-state", streamable.DefaultMaxStateBytes, "largest state of a shared session (-redis) stored, in `bytes`; a session over it ends")
	fs.Int64Var(&cfg.maxSessionEvents, "max-session-events", redisstore.DefaultMaxSessionEventBytes, "most `bytes` of stored SSE events of one shared session (-redis), for resumption; the oldest go first")
}

func (limitFlags) resolve(cfg *config, _ flagSource) error {
	switch {
	case cfg.requestTimeout < 0, cfg.idleTimeout < 0, cfg.httpIdleTimeout < 0, cfg.bodyReadTimeout < 0, cfg.listChangedDelay < 0:
		return errors.New("-request-timeout, -idle-timeout, -http-idle-timeout, -body-read-timeout and -list-changed-delay must not be negative")
	case cfg.maxFrame <= 0 || cfg.maxBody <= 0 || cfg.maxSessions <= 0 || cfg.maxInFlight <= 0:
		return errors.New("-max-frame, -max-body, -max-sessions and -max-in-flight must be positive")
	case cfg.toolConcurrency < 0 || cfg.gcHeadroomMiB < 0:
		return errors.New("-tool-concurrency and -gc-headroom must not be negative")
	case cfg.sseWriteTimeout <= 0 || cfg.initTimeout <= 0 || cfg.maxResumptions <= 0 || cfg.maxSessionState <= 0 || cfg.maxSessionEvents <= 0:
		return errors.New("-sse-write-timeout, -init-timeout, -max-resumptions, -max-session-state and -max-session-events must be positive")
	case cfg.maxResultBytes < 0:
		return errors.New("-max-result-bytes must not be negative")
	}
	return nil
}
