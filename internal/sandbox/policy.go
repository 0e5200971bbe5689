package sandbox

// Policy is what a confined process may reach. Its zero value reaches
// the system's files read-only, its program's own install paths and a
// private directory, and no network.
type Policy struct {
	// Read are paths the process may read (and execute) beneath, besides
	// the system's ([SystemPaths]) and its program's install paths.
	Read []string
	// Write are paths the process may read and write beneath.
	Write []string
	// Home is the process's private directory, read-write, its HOME and
	// TMPDIR; it must exist. Empty: none.
	Home string
	// Network is what the process may connect to.
	Network Network
	// MemoryBytes bounds the process's data (RLIMIT_DATA: its heap and
	// private writable mappings, each process of its own); 0: unbounded.
	MemoryBytes int64
	// Processes bounds the processes and threads of the sandbox together
	// (RLIMIT_NPROC, counted in its own user namespace); 0: unbounded.
	Processes int
	// OpenFiles bounds each process's open files (RLIMIT_NOFILE); 0: the
	// gateway's own limit.
	OpenFiles int
}

// Network is what a confined process may connect to.
type Network int

const (
	// NetworkNone is a network namespace of its own with only its own
	// loopback: nothing outside the sandbox.
	NetworkNone Network = iota
	// NetworkProxy is NetworkNone plus an HTTP proxy on the sandbox's own
	// loopback (HTTP_PROXY and HTTPS_PROXY name it), whose connections the
	// gateway serves ([Launch.Listener]): its egress proxy decides what is
	// reached.
	NetworkProxy
	// NetworkHost is the gateway's own network: everything it can reach.
	NetworkHost
)

// String names n as profiles do.
func (n Network) String() string {
	switch n {
	case NetworkProxy:
		return "proxy"
	case NetworkHost:
		return "host"
	default:
		return "none"
	}
}
