package main

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/stdiopeer"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// relay is the floor of a gateway in front of a server over stdio (-relay):
// a tools/call is written to the server's standard input as it came, one
// at a time, and the line that answers its id is the POST's answer. It
// checks, renames, counts and traces nothing: what is left of a gateway's
// hop is the HTTP exchange and the pipe's.
type relay struct {
	mu   sync.Mutex // one call at a time: the answer read next is its own
	peer *stdiopeer.Peer
}

// startRelay starts commandLine (split on spaces) and initializes a
// session with it.
func startRelay(commandLine string) (*relay, error) {
	peer, err := stdiopeer.Start(context.Background(), commandLine, "floor", protocol.Version20250618)
	if err != nil {
		return nil, err
	}
	return &relay{peer: peer}, nil
}

// call writes the request line and returns the line that answers id.
func (r *relay) call(line []byte, id json.RawMessage) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	answer, err := r.peer.Round(line, id)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(answer), nil
}

// close ends the server.
func (r *relay) close() { r.peer.Close() }
