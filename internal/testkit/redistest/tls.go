package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The users of a StartTLS server.
const (
	vigilUser = "vigil"
	adminUser = "admin"
)

// vigilACL is the ACL rule of the user Vigil's shared mode needs: its keys
// (redisstore's and the shared rate limits' "rate:vigil:"), its channels,
// and the commands it runs, no other (redisshare turns off go-redis's
// CLIENT SETINFO and CLIENT MAINT_NOTIFICATIONS). deploy/ has the same.
const vigilACL = "resetkeys ~vigil:* ~rate:vigil:* resetchannels &vigil:* -@all " +
	"+hello +auth +ping +select +quit +reset " +
	"+get +set +del +exists +pexpire +pttl +hset +hsetnx +hgetall " +
	"+sadd +scard +smembers +srem +xadd +xdel +xlen +xrange " +
	"+zadd +zcard +zcount +zrange +zrem +zremrangebyscore +zscore +time " +
	"+publish +pubsub|numsub +subscribe +unsubscribe +spublish +ssubscribe +sunsubscribe +evalsha +eval +multi +exec +discard +wait"

// tlsFiles are the certificates and passwords of a StartTLS server.
type tlsFiles struct {
	caFile, certFile, keyFile string
	pool                      *x509.CertPool
	password, adminPassword   string
}

// CAFile returns the PEM file of the CA of a StartTLS server's
// certificate ("" for Start's).
func (s *Server) CAFile() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.caFile
}

// Password returns the password of the user that URL names ("" for
// Start's, whose default user has none).
func (s *Server) Password() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.password
}

// serverArgs are redis-server's arguments for TLS only on port, and the
// users.
func (f *tlsFiles) serverArgs(port int) []string {
	// Each word of a rule is an argument of its own: redis-server quotes
	// an argument with spaces as one word.
	args := []string{
		"--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", f.certFile, "--tls-key-file", f.keyFile, "--tls-ca-cert-file", f.caFile,
		"--tls-auth-clients", "no", "--tls-protocols", "TLSv1.2 TLSv1.3",
		"--user", "default", "off",
		"--user", adminUser, "on", ">" + f.adminPassword, "~*", "&*", "+@all",
		"--user", vigilUser, "on", ">" + f.password,
	}
	return append(args, strings.Fields(vigilACL)...)
}

// writeTLSFiles writes a new CA and a certificate it signed for 127.0.0.1
// and localhost (ECDSA P-256) into dir.
func writeTLSFiles(dir string) (*tlsFiles, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redistest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redistest"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	f := &tlsFiles{
		caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "redis.pem"), keyFile: filepath.Join(dir, "redis.key"),
		pool: x509.NewCertPool(), password: randomSecret(), adminPassword: randomSecret(),
	}
	f.pool.AddCert(ca)
	for _, w := range []struct {
		path, typ string
		der       []byte
	}{{f.caFile, "CERTIFICATE", caDER}, {f.certFile, "CERTIFICATE", leafDER}, {f.keyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(w.path, pem.EncodeToMemory(&pem.Block{Type: w.typ, Bytes: w.der}), 0o600); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// randomSecret returns 24 random bytes in base64 (URL-safe, no padding).
func randomSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}
