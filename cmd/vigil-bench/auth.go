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
	"slices"
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

// benchPolicy is the -auth-policy of the policy figure: echo's policy
// reads the principal and the arguments, so that each call decodes them
// and runs a CEL program.
const benchPolicy = `default: 'true'
tools:
  echo: 'principal.subject != "mallory" && size(arguments.text) < 1000'
  sleep: 'arguments.ms < 1000 || "vigil.slow" in principal.scopes'
`

// runAuth measures what authorization costs: the same vigil binary twice,
// once with JWT verification against an issuer in this process and once
// without auth, under the same load: each client sends a valid token of
// its own (each session's clients share one), which the first verifies
// once and then finds in the verifier's cache, and the second ignores.
// Then runDPoP, then runPolicy.
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

	tokenFile, err := mintTokens(cfg, is, authURL, filepath.Join(dir, "tokens"))
	if err != nil {
		return err
	}

	fmt.Printf("vigil-bench  %s, authorization\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("vigil        %s (pid %d): vigil %s\n", plainURL, plain.Process.Pid, strings.Join(plainArgs, " "))
	fmt.Printf("vigil+jwt    %s (pid %d): vigil %s\n", authURL, authed.Process.Pid, strings.Join(authArgs, " "))
	fmt.Printf("tokens       %d RS256 JWTs (one per client; each session's clients share its first client's),\n", cfg.clients)
	fmt.Printf("             scope %q, minted by an issuer in this process (RFC 8414 metadata, JWKS);\n", benchScope)
	fmt.Printf("             both servers get the same load, tokens included: vigil without auth ignores them,\n")
	fmt.Printf("             so the ratio is what verifying them costs (carrying the bytes costs both alike)\n")
	if err := runLoad(ctx, cfg, dir, "vigil", plainURL, plain, tokenFile, "vigil+jwt", authURL, authed, tokenFile); err != nil {
		return err
	}
	if err := runDPoP(ctx, cfg, dir, is, plainURL, plain, tokenFile, authURL, authed); err != nil {
		return err
	}
	return runPolicy(ctx, cfg, dir, is, authArgs, authURL, authed, tokenFile)
}

// runPolicy measures what -auth-policy costs: vigil+jwt (running, at
// authURL) against the same with benchPolicy, whose echo policy decodes
// the arguments and runs on every call.
func runPolicy(ctx context.Context, cfg config, dir string, is *issuer, authArgs []string, authURL string, authed *exec.Cmd, authTokens string) (err error) {
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(benchPolicy), 0o600); err != nil {
		return err
	}
	policyArgs := append(slices.Clone(authArgs), "-auth-policy", policyFile)
	logPath := filepath.Join(dir, "vigil-policy.log")
	if cfg.vigilLog != "" {
		logPath = cfg.vigilLog
	}
	policed, policyURL, err := startVigil(ctx, filepath.Join(dir, "vigil"), policyArgs, logPath)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProcess(policed, "vigil with a policy")) }()
	tokenFile, err := mintTokens(cfg, is, policyURL, filepath.Join(dir, "tokens-policy"))
	if err != nil {
		return err
	}
	fmt.Printf("\nvigil-bench  %s, tool policies\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("vigil+policy %s (pid %d): vigil %s\n", policyURL, policed.Process.Pid, strings.Join(policyArgs, " "))
	fmt.Printf("policy       echo: %s\n", `principal.subject != "mallory" && size(arguments.text) < 1000`)
	fmt.Printf("             against vigil+jwt: the ratio is what deciding each call costs\n")
	return runLoad(ctx, cfg, dir, "vigil+jwt", authURL, authed, authTokens, "vigil+policy", policyURL, policed, tokenFile)
}

// mintTokens writes to path one token per client for the resource url,
// and returns path.
func mintTokens(cfg config, is *issuer, url, path string) (string, error) {
	var tokens strings.Builder
	for i := range cfg.clients {
		tok, err := is.token(url, "bench-client-"+strconv.Itoa(i), benchScope)
		if err != nil {
			return "", err
		}
		tokens.WriteString(tok + "\n")
	}
	return path, os.WriteFile(path, []byte(tokens.String()), 0o600)
}

// runLoad runs the load generator against floor and vigil, each with its
// tokens.
func runLoad(ctx context.Context, cfg config, dir, floorName, floorURL string, floor *exec.Cmd, floorTokens, name, url string, vigil *exec.Cmd, tokens string, extra ...string) error {
	loadArgs := append(append([]string{
		"-floor", floorURL, "-floor-pid", strconv.Itoa(floor.Process.Pid), "-floor-name", floorName,
		"-vigil", url, "-vigil-pid", strconv.Itoa(vigil.Process.Pid), "-vigil-name", name,
		"-vigil-tokens", tokens, "-floor-tokens", floorTokens,
	}, extra...), cfg.loadFlags...)
	load := exec.CommandContext(ctx, filepath.Join(dir, "load"), loadArgs...)
	load.Stdout, load.Stderr = os.Stdout, os.Stderr
	if err := load.Run(); err != nil {
		return fmt.Errorf("load generator: %w", err)
	}
	return nil
}

// runDPoP measures what DPoP costs: vigil without auth (running, at
// plainURL, with its tokens) against vigil+jwt (at authURL) given tokens
// bound to one client key, each request with a fresh proof of its own
// (minted by the load generator), which vigil verifies and remembers.
func runDPoP(ctx context.Context, cfg config, dir string, is *issuer, plainURL string, plain *exec.Cmd, plainTokens, authURL string, authed *exec.Cmd) error {
	keyFile, jkt, err := writeDPoPKey(dir)
	if err != nil {
		return err
	}
	var tokens strings.Builder
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
	return runLoad(ctx, cfg, dir, "vigil", plainURL, plain, plainTokens, "vigil+dpop", authURL, authed, dpopFile, "-vigil-dpop-key", keyFile)
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
