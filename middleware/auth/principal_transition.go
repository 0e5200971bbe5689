package auth

import "context"

// PrincipalFrom is [PrincipalFromContext], under its former name, for the
// one caller another change moves (cmd/vigil's debug page): once that
// caller uses PrincipalFromContext, this file goes.
func PrincipalFrom(ctx context.Context) (*Principal, bool) { return PrincipalFromContext(ctx) }
