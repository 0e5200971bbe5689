// Package sandbox confines the processes a gateway starts (its stdio
// upstreams) with the kernel's own mechanisms, unprivileged and without
// a daemon: namespaces of their own (user, PID, mount, network, IPC,
// UTS), Landlock for files, a seccomp filter for the system calls no MCP
// server needs, no_new_privs and no capability, and resource limits.
//
// The confining is done by the program itself, started again as the
// sandbox's launcher: [Prepare] turns an [os/exec.Cmd] into the
// launcher's, which runs in the new namespaces, confines itself, reports
// on a socket and then executes the program in its place; [Main], the
// first call of the program's main, is where the launcher runs. A program
// that prepares sandboxes must call [Main] first, or the launcher reports
// nothing and the start fails, naming it.
//
// docs/security.md, "Upstreams are strangers", says what each mechanism
// stops and what it does not.
package sandbox
