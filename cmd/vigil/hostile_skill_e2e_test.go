package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The acceptance figure of issue 56 (N1): 64 concurrent reads of a 12 MiB
// skill file keep vigil's resident memory under 150 MiB (it reached 3.2
// GiB when every read copied and encoded the file again).
const (
	skillReadFileSize = 12 << 20
	skillReadClients  = 64
	skillReadRSSLimit = 150 << 20
)

// 64 stateless reads at once of a 12 MiB binary skill file (served as 16
// MiB of base64) are each answered with the whole file, while vigil's
// resident memory, sampled as they run, stays under 150 MiB: the file is
// encoded once, at start, and every read writes those bytes.
func TestHostileSkillFileReads(t *testing.T) {
	dir := t.TempDir()
	skill := filepath.Join(dir, "big")
	require.NoError(t, os.MkdirAll(skill, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: big\ndescription: A skill with a large reference file\n---\nSee reference.bin.\n"), 0o600))
	data := make([]byte, skillReadFileSize)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(data)
	require.NoError(t, os.WriteFile(filepath.Join(skill, "reference.bin"), data, 0o600))

	svc := startService(t, "-http", "127.0.0.1:0", "-skills", dir) // -max-result-bytes as by default
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: skillReadClients}, Timeout: 2 * time.Minute}
	t.Cleanup(hc.CloseIdleConnections)
	const uri = "skill://big/reference.bin"
	body := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + uri + `","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	read := func() (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, svc.base+"/mcp", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "resources/read")
		req.Header.Set("Mcp-Name", uri)
		return hc.Do(req)
	}

	// A first read, decoded: the file, whole. Every read's answer is the
	// same bytes, so the others are checked by length and digest.
	resp, err := read()
	require.NoError(t, err)
	first, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%.200s", first)
	var m struct {
		Result struct {
			Contents []struct {
				Blob string `json:"blob"`
			} `json:"contents"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(first, &m))
	require.Nil(t, m.Error)
	require.Len(t, m.Result.Contents, 1)
	got, err := base64.StdEncoding.DecodeString(m.Result.Contents[0].Blob)
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "the first read returns the file")
	want := sha256.Sum256(first)

	pid := svc.cmd.Process.Pid
	rss0 := vmRSS(t, pid)
	start := make(chan struct{})
	errs := make([]error, skillReadClients)
	var wg sync.WaitGroup
	for i := range skillReadClients {
		wg.Go(func() {
			<-start // all at once
			errs[i] = checkRead(read, want)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	close(start)
	peak := rss0
	tick := time.NewTicker(2 * time.Millisecond) // sampling, not waiting: the reads end done
	defer tick.Stop()
	for sampling := true; sampling; {
		select {
		case <-done:
			sampling = false
		case <-tick.C:
		}
		peak = max(peak, vmRSS(t, pid))
	}
	for i, err := range errs {
		require.NoError(t, err, "read %d", i)
	}
	t.Logf("%d reads at once of a %d MiB skill file: vigil's RSS %.1f MiB before, peak %.1f MiB (limit %d MiB)",
		skillReadClients, skillReadFileSize>>20, float64(rss0)/(1<<20), float64(peak)/(1<<20), skillReadRSSLimit>>20)
	assert.Less(t, peak, int64(skillReadRSSLimit), "vigil's peak RSS during the reads")
}

// checkRead reads the file once and checks that the answer is the one
// whose digest is want (so of its length too), hashed as it streams in.
func checkRead(read func() (*http.Response, error), want [sha256.Size]byte) error {
	resp, err := read()
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		return err
	}
	if [sha256.Size]byte(h.Sum(nil)) != want {
		return fmt.Errorf("an answer of %d bytes that is not the file's", n)
	}
	return nil
}
