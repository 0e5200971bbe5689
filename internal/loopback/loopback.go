package loopback

import (
	"net"
	"strings"
)

// ListenAddr reports whether the host of the listen address addr
// (host:port, or a bare host) is "localhost" or a loopback IP; an empty
// host, every interface, is not.
func ListenAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
