package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The scopes of the -auth benchmark: every request needs benchScope, which
// the tokens hold; the sleep tool also needs benchToolScope, which they
// do not, so that the server must find out which tool each call names.
const (
	benchScope     = "vigil.read"
	benchToolScope = "vigil.slow"
)

// runAuth measures what authorization costs: the same vigil binary twice,
// once with JWT verification against an issuer in this process and once
// without auth, under the same load: each client sends a valid token of
// its own (each session's clients share one), which the first verifies
// once and then finds in the verifier's cache, and the second ignores.
// Then the same with DPoP: the tokens bound to a client key, each request
// with a proof of its own, which vigil verifies and remembers.
func runAuth(ctx context.Context, cfg config, dir string) (err error) {
	fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil and the load generator into %s\n", dir)
	if err := goBuild(ctx, cfg.goCmd, cfg.vigilSrc, dir, "github.com/vigil-mcp/vigil/cmd/vigil"); err != nil {
		return err
	}
	if err := goBuild(ctx, cfg.goCmd, "", dir, "github.com/vigil-mcp/vigil/cmd/vigil-bench/load"); err != nil {
		return err
	}
	is, err := startIssuer(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, is.close()) }()

	plainArgs := []string{"-http", "127.0.0.1:0"}
	authArgs := []string{"-http", "127.0.0.1:0", "-auth-issuer", is.url, "-auth-scopes", benchScope, "-auth-tool-scopes", "sleep=" + benchToolScope}
	logs := [2]string{filepath.Join(dir, "vigil.log"), filepath.Join(dir, "vigil-auth.log")}
	if cfg.vigilLog != "" {
		logs = [2]string{cfg.vigilLog, cfg.vigilLog}
	}
	plain, plainURL, err := startVigil(ctx, filepath.Join(dir, "vigil"), plainArgs, logs[0])
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProcess(plain, "vigil")) }()
	authed, authURL, err := startVigil(ctx, filepath.Join(dir, "vigil"), authArgs, logs[1])
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProcess(authed, "vigil with auth")) }()

	var tokens strings.Builder
	for i := range cfg.clients {
		tok, err := is.token(authURL, "bench-client-"+strconv.Itoa(i), benchScope)
		if err != nil {
			return err
		}
		tokens.WriteString(tok + "\n")
	}
	tokenFile := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokenFile, []byte(tokens.String()), 0o600); err != nil {
		return err
	}

	fmt.Printf("vigil-bench  %s, authorization\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("vigil        %s (pid %d): vigil %s\n", plainURL, plain.Process.Pid, strings.Join(plainArgs, " "))
	fmt.Printf("vigil+jwt    %s (pid %d): vigil %s\n", authURL, authed.Process.Pid, strings.Join(authArgs, " "))
	fmt.Printf("tokens       %d RS256 JWTs (one per client; each session's clients share its first client's),\n", cfg.clients)
	fmt.Printf("             scope %q, minted by an issuer in this process (RFC 8414 metadata, JWKS);\n", benchScope)
	fmt.Printf("             both servers get the same load, tokens included: vigil without auth ignores them,\n")
	fmt.Printf("             so the ratio is what verifying them costs (carrying the bytes costs both alike)\n")
	loadArgs := append([]string{
		"-floor", plainURL, "-floor-pid", strconv.Itoa(plain.Process.Pid), "-floor-name", "vigil",
		"-vigil", authURL, "-vigil-pid", strconv.Itoa(authed.Process.Pid), "-vigil-name", "vigil+jwt",
		"-vigil-tokens", tokenFile, "-floor-tokens", tokenFile,
	}, cfg.loadFlags...)
	load := exec.CommandContext(ctx, filepath.Join(dir, "load"), loadArgs...)
	load.Stdout, load.Stderr = os.Stdout, os.Stderr
	if err := load.Run(); err != nil {
		return fmt.Errorf("load generator: %w", err)
	}

	// DPoP: the same, with tokens bound to a client key, each request with
	// a proof of its own (minted by the load generator).
	keyFile, jkt, err := writeDPoPKey(dir)
	if err != nil {
		return err
	}
	tokens.Reset()
	for i := range cfg.clients {
		tok, err := is.boundToken(authURL, "bench-client-"+strconv.Itoa(i), jkt, benchScope)
		if err != nil {
			return err
		}
		tokens.WriteString(tok + "\n")
	}
	dpopFile := filepath.Join(dir, "dpop-tokens")
	if err := os.WriteFile(dpopFile, []byte(tokens.String()), 0o600); err != nil {
		return err
	}
	fmt.Printf("\nvigil+dpop   the same vigil with auth, the tokens DPoP-bound (cnf.jkt) to one P-256 key and sent\n")
	fmt.Printf("             with the DPoP scheme and a fresh ES256 proof per request (minted by the load generator),\n")
	fmt.Printf("             each proof verified and its jti remembered: the ratio is what verifying tokens and proofs costs\n")
	loadArgs = append([]string{
		"-floor", plainURL, "-floor-pid", strconv.Itoa(plain.Process.Pid), "-floor-name", "vigil",
		"-vigil", authURL, "-vigil-pid", strconv.Itoa(authed.Process.Pid), "-vigil-name", "vigil+dpop",
		"-vigil-tokens", dpopFile, "-floor-tokens", tokenFile, "-vigil-dpop-key", keyFile,
	}, cfg.loadFlags...)
	load = exec.CommandContext(ctx, filepath.Join(dir, "load"), loadArgs...)
	load.Stdout, load.Stderr = os.Stdout, os.Stderr
	if err := load.Run(); err != nil {
		return fmt.Errorf("load generator (DPoP): %w", err)
	}
	return nil
}

// writeDPoPKey writes a new P-256 key to dir (PEM PKCS #8), for the load
// generator's proofs, and returns its file and RFC 7638 thumbprint.
func writeDPoPKey(dir string) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	file := filepath.Join(dir, "dpop-key.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	pub, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		return "", "", err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	sum := sha256.Sum256([]byte(`{"crv":"P-256","kty":"EC","x":"` + b64(pub[1:33]) + `","y":"` + b64(pub[33:]) + `"}`))
	return file, b64(sum[:]), nil
}
