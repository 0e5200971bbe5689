package upstream

import (
	"errors"

	"github.com/vigil-mcp/vigil/internal/oversize"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// KillProcess kills p's process group, as Close does once its grace is
// over: the tests' way to make an upstream die mid-call.
func KillProcess(p *Process) { killGroup(p.cmd) }

// OversizeLine is oversizeLine, what a process's stdout Conn makes of a
// line over max bytes.
func OversizeLine(limit int) stdio.OversizeFunc { return oversizeLine(limit) }

// OversizeResponse reports whether derr, of a message over the bound, is
// of a response.
func OversizeResponse(derr *transport.DecodeError) bool {
	o, ok := errors.AsType[*oversize.Error](derr.Err)
	return ok && o.Response
}
