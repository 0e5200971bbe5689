package oauth

// CheckTokenSyntax is checkTokenSyntax, for the external tests.
var CheckTokenSyntax = checkTokenSyntax
