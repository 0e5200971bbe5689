package mcpconv

import "strconv"

// PolicyDenied is the cause of the error that answers a tools/call a tool
// policy denied (package middleware/policy): the audit log reads the
// policy's name from it.
type PolicyDenied struct {
	Policy string // "default" or "tools.NAME"
}

func (d *PolicyDenied) Error() string { return "denied by policy " + strconv.Quote(d.Policy) }
