package benchservice

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RSSOf returns the resident set size of process pid in bytes, from the
// VmRSS line of /proc/<pid>/status; false outside Linux or if the process
// is gone.
func RSSOf(pid int) (int64, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	return ParseVMRSS(raw)
}

// ParseVMRSS returns the VmRSS of a /proc/<pid>/status file's contents in
// bytes (the file gives kB); false if there is no such line.
func ParseVMRSS(status []byte) (int64, bool) { return statusBytes(status, "VmRSS:") }

// PeakRSSOf returns the peak resident set size of process pid in bytes,
// from the VmHWM line of /proc/<pid>/status, since it started or since
// [ResetPeakRSS]; false outside Linux or if the process is gone.
func PeakRSSOf(pid int) (int64, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	return statusBytes(raw, "VmHWM:")
}

// Resident is a process's memory, in bytes, from /proc/<pid>/status: its
// resident set (VmRSS), what of it the process allocated (RssAnon) and
// the pages of files it maps, its executable's among them (RssFile), and
// the peak resident set (VmHWM).
type Resident struct{ RSS, Anon, File, Peak int64 }

// ResidentOf returns pid's Resident; false outside Linux or if the
// process is gone.
func ResidentOf(pid int) (Resident, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Resident{}, false
	}
	var r Resident
	var ok [4]bool
	r.RSS, ok[0] = statusBytes(raw, "VmRSS:")
	r.Anon, ok[1] = statusBytes(raw, "RssAnon:")
	r.File, ok[2] = statusBytes(raw, "RssFile:")
	r.Peak, ok[3] = statusBytes(raw, "VmHWM:")
	return r, ok == [4]bool{true, true, true, true}
}

// SwitchesOf returns the context switches of pid's threads so far,
// voluntary and not, from /proc/<pid>/task/*/status (a thread that has
// gone no longer counts).
func SwitchesOf(pid int) int64 {
	dirs, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/status")
	var n int64
	for _, d := range dirs {
		raw, err := os.ReadFile(d)
		if err != nil {
			continue // the thread has gone
		}
		for _, prefix := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
			if f, ok := lineFields(raw, prefix); ok && len(f) == 1 {
				x, _ := strconv.ParseInt(f[0], 10, 64)
				n += x
			}
		}
	}
	return n
}

// ResetPeakRSS sets the peak resident set size of process pid (VmHWM) to
// its current one, by writing 5 to /proc/<pid>/clear_refs, which a process
// may do for its own children.
func ResetPeakRSS(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}

// statusBytes returns the value of the /proc/<pid>/status line that starts
// with prefix in bytes (the file gives kB); false if there is no such line.
func statusBytes(status []byte, prefix string) (int64, bool) {
	f, ok := lineFields(status, prefix)
	if !ok || len(f) != 2 || f[1] != "kB" {
		return 0, false
	}
	kb, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, false
	}
	return kb << 10, true
}

// lineFields returns the fields after prefix on the first line of content
// that starts with it; false if none does.
func lineFields(content []byte, prefix string) ([]string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return strings.Fields(rest), true
		}
	}
	return nil, false
}

// MachineSteal returns the CPU time the hypervisor has given other guests
// while this machine's CPUs wanted it ("steal", from /proc/stat), summed
// over its CPUs since boot; false outside Linux or without the field. On
// a shared virtual machine it is the noise of a benchmark's rounds: the
// rounds it falls in run slower for reasons of no server's.
func MachineSteal() (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	return ParseSteal(raw)
}

// ParseSteal returns the steal time of a /proc/stat file's contents: the
// eighth figure of its "cpu" line, in USER_HZ ticks (100 a second on
// Linux); false if there is none.
func ParseSteal(stat []byte) (time.Duration, bool) {
	f, ok := lineFields(stat, "cpu ")
	if !ok || len(f) < 8 {
		return 0, false
	}
	ticks, err := strconv.ParseInt(f[7], 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ticks) * (time.Second / 100), true
}
