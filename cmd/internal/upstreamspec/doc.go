// Package upstreamspec reads the values of vigil's -upstream* flags into
// the gateway's upstreams: the targets and their environment ([Parse]),
// the tools let through ([ApplyTools]), the byte bounds ([ApplyBytes]),
// those /readyz requires ([Required]), and each HTTP upstream's headers
// and token ([ParseCredentials], [Auth]), which [Credentials] turns into
// the gateway's Upstream.Credentials. Only cmd/vigil imports it.
package upstreamspec
