package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// SystemPaths are the paths every confined process may read and execute
// beneath, where they exist: the system's programs and libraries, and
// the files of /etc that running a program needs (the loader's cache,
// certificates, name resolution, users, time zones, alternatives), not
// all of /etc. /proc is the sandbox's own (its PID namespace's): it shows
// no other process.
var systemPaths = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/alternatives", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/ssl", "/etc/pki",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf",
	"/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone", "/usr/share/zoneinfo",
	"/etc/mime.types", "/etc/os-release", "/etc/protocols", "/etc/services",
	"/etc/gitconfig", "/etc/npmrc", "/etc/python3", "/etc/node",
	"/proc", "/sys/devices/system/cpu", "/sys/fs/cgroup",
}

// SystemPaths returns the paths every confined process may read and
// execute beneath: the system's programs, libraries and the files of
// /etc that running one needs, not all of /etc.
func SystemPaths() []string { return append([]string(nil), systemPaths...) }

// devices are the device files every confined process may read and write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// installPaths returns the directories a command needs to read to run,
// besides the system's: the program's own directory, or its node_modules
// tree (and, for one in a bin, sbin or shims directory, its installation
// beside it: lib, libexec, share, a version manager's versions), for the
// program as named and as its links resolve; and for each argument
// naming an existing file, its directory or, in a node_modules tree, the
// tree. An argument naming a directory is not granted: the profile says
// what a server may read or write.
func installPaths(program string, args []string, dir string) []string {
	var out []string
	add := func(p string) {
		if p != "" && p != "/" {
			out = append(out, p)
		}
	}
	if resolved, err := filepath.EvalSymlinks(program); err == nil {
		for _, p := range []string{program, resolved} {
			d := filepath.Dir(p)
			add(moduleTree(p)) // a script in a node_modules tree (a .bin link's target) imports the tree
			add(d)
			switch filepath.Base(d) {
			case "shims": // a version manager's (pyenv, rbenv): its whole tree
				add(filepath.Dir(d))
			case "bin", "sbin":
				root := filepath.Dir(d)
				for _, sub := range []string{"lib", "lib64", "libexec", "share", "pyvenv.cfg"} {
					if _, err := os.Stat(filepath.Join(root, sub)); err == nil {
						add(filepath.Join(root, sub))
					}
				}
			}
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.ContainsRune(a, '=') {
			continue
		}
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if st, err := os.Stat(resolved); err != nil || st.IsDir() {
			continue
		}
		add(moduleTree(resolved))
	}
	return out
}

// moduleTree returns the directory to grant for a file: the first
// node_modules directory above it, or its own directory.
func moduleTree(file string) string {
	parts := strings.Split(file, string(filepath.Separator))
	for i, part := range parts[:len(parts)-1] {
		if part == "node_modules" {
			return strings.Join(parts[:i+1], string(filepath.Separator))
		}
	}
	return filepath.Dir(file)
}
