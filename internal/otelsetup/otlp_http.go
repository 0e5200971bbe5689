package otelsetup

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// OTLP over HTTP is sent here rather than with otlptracehttp and
// otlpmetrichttp: those import the OTLP collector packages, which import
// gRPC and grpc-gateway, so that a service that never speaks gRPC would
// link it (open-telemetry/opentelemetry-go#2579). What is sent is the
// same: an Export*ServiceRequest, protobuf-encoded, POSTed to the signal's
// path, configured by the same OTEL_EXPORTER_OTLP_* variables.

const (
	// otlpDefaultEndpoint is where OTLP over HTTP goes when no
	// OTEL_EXPORTER_OTLP_*ENDPOINT says otherwise.
	otlpDefaultEndpoint = "http://localhost:4318"
	// otlpDefaultTimeout bounds each export when OTEL_EXPORTER_OTLP_*TIMEOUT
	// says nothing, as the OTLP exporter specification says.
	otlpDefaultTimeout = 10 * time.Second
	// otlpRetryFor bounds how long an export that the collector asks to
	// retry (429, 502, 503, 504) is retried.
	otlpRetryFor = time.Minute
	// otlpMaxResponse bounds the part of a collector's answer read (for an
	// error message) before the connection is reused.
	otlpMaxResponse = 64 << 10
)

// otlpHTTP posts Export*ServiceRequests of one signal.
type otlpHTTP struct {
	url      string
	headers  http.Header
	gzip     bool
	timeout  time.Duration
	client   *http.Client
	retryMin time.Duration // the first retry's wait, doubled after each
}

// newOTLPHTTP reads the OTEL_EXPORTER_OTLP_* variables of signal
// ("TRACES" or "METRICS", whose path is /v1/traces or /v1/metrics), the
// signal's own variable winning over the shared one, as the OTLP exporter
// specification says: ENDPOINT (the signal's is the full URL; the shared
// one gets the signal's path), HEADERS (key=value pairs, comma-separated,
// values URL-encoded), TIMEOUT (milliseconds), COMPRESSION (gzip or none),
// CERTIFICATE, CLIENT_CERTIFICATE and CLIENT_KEY (PEM files).
func newOTLPHTTP(signal, path string) (*otlpHTTP, error) {
	env := func(name string) (string, string) {
		if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_" + name)); v != "" {
			return v, "OTEL_EXPORTER_OTLP_" + signal + "_" + name
		}
		return strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_" + name)), "OTEL_EXPORTER_OTLP_" + name
	}
	c := &otlpHTTP{timeout: otlpDefaultTimeout, headers: make(http.Header), retryMin: time.Second}
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT")); v != "" {
		c.url = v
	} else {
		base := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		if base == "" {
			base = otlpDefaultEndpoint
		}
		c.url = strings.TrimSuffix(base, "/") + path
	}
	u, err := url.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otelsetup: the OTLP %s endpoint %q is not an http or https URL", strings.ToLower(signal), c.url)
	}
	if v, name := env("HEADERS"); v != "" {
		if err := parseOTLPHeaders(v, c.headers); err != nil {
			return nil, fmt.Errorf("otelsetup: %s: %w", name, err)
		}
	}
	if v, name := env("TIMEOUT"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("otelsetup: %s=%q: want a positive number of milliseconds", name, v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, name := env("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, fmt.Errorf("otelsetup: %s=%q: want gzip or none", name, v)
	}
	tlsConfig, err := otlpTLS(env)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if tlsConfig != nil {
		transport.TLSClientConfig = tlsConfig
	}
	c.client = &http.Client{Transport: transport}
	return c, nil
}

// parseOTLPHeaders adds the headers of an OTEL_EXPORTER_OTLP_*HEADERS
// value to h.
func parseOTLPHeaders(v string, h http.Header) error {
	for pair := range strings.SplitSeq(v, ",") {
		key, value, ok := strings.Cut(pair, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return errors.New("want key=value pairs separated by commas")
		}
		value, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("the value of %s is not URL-encoded", key)
		}
		h.Add(key, value)
	}
	return nil
}

// otlpTLS is the TLS configuration of the certificate variables, nil
// when none is set.
func otlpTLS(env func(string) (string, string)) (*tls.Config, error) {
	ca, caName := env("CERTIFICATE")
	cert, certName := env("CLIENT_CERTIFICATE")
	key, keyName := env("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("otelsetup: %s: %w", caName, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("otelsetup: %s: %s holds no PEM certificate", caName, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("otelsetup: %s and %s go together", certName, keyName)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("otelsetup: %s, %s: %w", certName, keyName, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// appendRepeated appends msg, encoded, as field 1 of a message: how an
// Export*ServiceRequest holds its resource spans or metrics, so that the
// request is encoded without the collector packages that define it.
func appendRepeated(b []byte, msg proto.Message) ([]byte, error) {
	enc, err := proto.Marshal(msg)
	if err != nil {
		return nil, err
	}
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, enc), nil
}

// export posts body, retrying while the collector answers 429, 502, 503
// or 504 (after its Retry-After, or a wait that doubles from a second)
// for at most otlpRetryFor or until ctx ends; each attempt gets the
// configured timeout.
func (c *otlpHTTP) export(ctx context.Context, body []byte) error {
	if c.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		body = buf.Bytes()
	}
	deadline := time.Now().Add(otlpRetryFor)
	wait := c.retryMin
	for {
		retryAfter, err := c.post(ctx, body)
		if retryAfter < 0 || err == nil {
			return err
		}
		if retryAfter == 0 {
			retryAfter = wait
			wait = min(2*wait, 30*time.Second)
		}
		if time.Now().Add(retryAfter).After(deadline) {
			return err
		}
		t := time.NewTimer(retryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// post makes one attempt. retryAfter is negative when the error is not
// to be retried, else the wait the collector asked for (0 for none).
func (c *otlpHTTP) post(ctx context.Context, body []byte) (retryAfter time.Duration, _ error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	for k, v := range c.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("otelsetup: OTLP export to %s: %w", redactURL(c.url), err)
	}
	defer func() { _ = resp.Body.Close() }()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, otlpMaxResponse))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, nil
	}
	err = fmt.Errorf("otelsetup: OTLP export to %s: %s: %s", redactURL(c.url), resp.Status, bytes.ToValidUTF8(bytes.TrimSpace(msg[:min(len(msg), 512)]), nil))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			return time.Duration(min(s, 3600)) * time.Second, err
		}
		return 0, err
	}
	return -1, err
}

// redactURL is u without its user information, for errors.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "the OTLP endpoint"
	}
	return p.Redacted()
}

// close releases the idle connections.
func (c *otlpHTTP) close() { c.client.CloseIdleConnections() }
