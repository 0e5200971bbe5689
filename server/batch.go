package server

import (
	"errors"
	"sync"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// batch answers a JSON-RPC batch, which the 2024-11-05 and 2025-03-26
// protocol versions allow. Each element is handled as if it came alone; the
// answers are written together, as one array, when the last request is done.
func (ss *Session) batch(b transport.Batch) {
	ss.mu.Lock()
	version, ph := ss.st.version, ss.st.phase
	ss.mu.Unlock()
	if ph == phaseNew || !batchesAllowed(version) {
		why := "JSON-RPC batches are not supported by protocol version " + version
		if ph == phaseNew {
			why = "JSON-RPC batches are not accepted before initialize"
		}
		ss.reject(nil, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, why)
		return
	}
	col := &batchCollector{ss: ss, pending: 1} // held open while dispatching
	for _, raw := range b {
		msg, err := transport.DecodeMessage(raw)
		if de, ok := errors.AsType[*transport.DecodeError](err); ok {
			col.hold()
			ss.reject(col, de.ID, de.Code, de.Reason(), de.Err.Error())
			continue
		}
		switch m := msg.(type) {
		case *transport.Request:
			if m.IsNotification() {
				ss.notification(ss.parent, m)
			} else {
				col.hold()
				ss.admit(m, col, nil)
			}
		case *transport.Response:
			ss.answer(m)
		case transport.Batch:
			col.hold()
			ss.reject(col, transport.ID{}, protocol.CodeInvalidRequest, protocol.RejectInvalidRequest, "nested batch")
		}
	}
	col.skip()
}

// batchCollector gathers the answers of one batch.
type batchCollector struct {
	ss      *Session
	mu      sync.Mutex
	pending int
	resps   transport.ResponseBatch
	sealers []func(error)
}

func (c *batchCollector) hold() {
	c.mu.Lock()
	c.pending++
	c.mu.Unlock()
}

// add records one answer; seal (may be nil) learns the batch write's result.
func (c *batchCollector) add(resp *transport.Response, seal func(error)) {
	c.mu.Lock()
	c.resps = append(c.resps, resp)
	if seal != nil {
		c.sealers = append(c.sealers, seal)
	}
	c.mu.Unlock()
	c.skip()
}

// skip marks one element done without an answer. Safe on a nil collector.
func (c *batchCollector) skip() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.pending--
	done := c.pending == 0
	c.mu.Unlock()
	if !done {
		return
	}
	var err error
	if len(c.resps) > 0 {
		err = c.ss.write(c.ss.ctx, c.resps)
	}
	for _, seal := range c.sealers {
		seal(err)
	}
}

// batchesAllowed reports whether JSON-RPC batches are part of protocol
// version v (they were dropped in 2025-06-18).
func batchesAllowed(v string) bool {
	return v == protocol.Version20250326 || v == protocol.Version20241105
}
