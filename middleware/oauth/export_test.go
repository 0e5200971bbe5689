package oauth

import "github.com/vigil-mcp/vigil/transport/protocol"

// CheckTokenSyntax is checkTokenSyntax, for the external tests.
var CheckTokenSyntax = checkTokenSyntax

// Rejected is rs.rejected, the reject hook Endpoint hands its Endpoint,
// for the external tests.
func Rejected(rs *ResourceServer, reason protocol.RejectReason) { rs.rejected(reason) }
