package auth_test

import (
	"context"
	"fmt"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// A handler reads the principal the OAuth guard verified; a test calls
// it as a principal by putting one in its context.
func ExamplePrincipalFromContext() {
	whoami := func(ctx context.Context) string {
		p, ok := auth.PrincipalFromContext(ctx)
		if !ok {
			return "anonymous"
		}
		return p.Subject + " may write: " + fmt.Sprint(p.HasScopes("notes:write"))
	}
	ctx := auth.ContextWithPrincipal(context.Background(), &auth.Principal{Subject: "alice", Scopes: []string{"notes:read"}})
	fmt.Println(whoami(context.Background()))
	fmt.Println(whoami(ctx))
	// Output:
	// anonymous
	// alice may write: false
}
