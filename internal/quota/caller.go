package quota

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultIPv6Prefix is the IPv6 network an unauthenticated caller is
// counted by (see Addr): one host commonly owns a whole /64.
const DefaultIPv6Prefix = 64

// maxAddrKey bounds the key of a client address that is not an IP address.
const maxAddrKey = 64

// PrincipalKey joins a principal's issuer, subject and client into its
// key (auth.Principal.Key): issuer and subject each length-prefixed, so
// that no choice of parts forges another's key, then the client. User
// cuts the client off.
func PrincipalKey(issuer, subject, client string) string {
	return strconv.Itoa(len(issuer)) + ":" + issuer + " " + strconv.Itoa(len(subject)) + ":" + subject + " " + client
}

// User returns the part of a principal key (PrincipalKey) that names the
// user, its issuer and subject without the client, for the quotas: a user
// who mints client ids (dynamic registration, client-ID metadata
// documents) gets no more than its one share. A key of another form is
// its own user. It allocates nothing (a prefix of key).
func User(principalKey string) string {
	end := 0
	for range 2 {
		colon := strings.IndexByte(principalKey[end:], ':')
		if colon < 1 {
			return principalKey
		}
		n, err := strconv.Atoi(principalKey[end : end+colon])
		if err != nil || n < 0 || n >= len(principalKey)-end-colon-1 {
			return principalKey
		}
		end += colon + 1 + n
		if principalKey[end] != ' ' {
			return principalKey
		}
		end++
	}
	return principalKey[:end-1]
}

// Addr returns the caller key of an unauthenticated client at host (the
// host part of http.Request.RemoteAddr): an IPv4 address as is (with no
// allocation), an IPv4-mapped IPv6 address as its IPv4 address, another
// IPv6 address as its network of v6Bits bits ("2001:db8:1:2::/64"), so
// that the addresses one host owns count as one caller; anything else cut
// to 64 bytes.
func Addr(host string, v6Bits int) string {
	if strings.IndexByte(host, ':') < 0 {
		return bounded(host)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return bounded(host)
	}
	if a.Is4In6() {
		return a.Unmap().String()
	}
	p, err := a.WithZone("").Prefix(v6Bits)
	if err != nil {
		return a.WithZone("").String()
	}
	return p.String()
}

// RemoteAddr returns Addr of the host of remote, an http.Request's
// RemoteAddr (host:port, an IPv6 host in brackets).
func RemoteAddr(remote string, v6Bits int) string {
	host := remote
	if i := strings.LastIndexByte(remote, ':'); i >= 0 && !strings.HasSuffix(remote, "]") {
		host = remote[:i]
	}
	return Addr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), v6Bits)
}

func bounded(s string) string {
	if len(s) > maxAddrKey {
		return s[:maxAddrKey]
	}
	return s
}

type addrKey struct{}

// ContextWithAddr returns a copy of ctx, a connection's context, carrying
// the caller key of its unauthenticated client (Addr with the prefix the
// server was configured with), for CallerAddr.
func ContextWithAddr(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, addrKey{}, key)
}

// CallerAddr returns the caller key of an unauthenticated request whose
// context is ctx and RemoteAddr remote: the one its connection's context
// carries (ContextWithAddr), else RemoteAddr's with DefaultIPv6Prefix.
func CallerAddr(ctx context.Context, remote string) string {
	if k, ok := ctx.Value(addrKey{}).(string); ok {
		return k
	}
	return RemoteAddr(remote, DefaultIPv6Prefix)
}
