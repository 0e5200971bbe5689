package accounts

// NewSecretEntry returns an entry holding access and refresh, for the
// redaction tests.
func NewSecretEntry(access, refresh string) any {
	return &entry{access: secret(access), refresh: secret(refresh)}
}

// NewSecret returns a secret holding s.
func NewSecret(s string) any { return secret(s) }
