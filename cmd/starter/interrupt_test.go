package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/store"
)

// TestInterruptPrintsNoSDKErrors interrupts `starter run` (its context ends, as on Ctrl-C) while passes are in
// flight, and checks that no log line of the Temporal SDK or the embedded server reached the terminal, nor an
// error in silico's words: the passes that the stopping worker ends are not errors, and the server's complaints
// while it starts on a busy machine ("Frontend is not healthy yet") belong in the log file, which holds them.
func TestInterruptPrintsNoSDKErrors(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv(store.EnvDSN, "")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		// Two calls at a time at 300 ms: the 1,000 cells take minutes, so the interrupt finds passes running.
		code := run(ctx, []string{"run", cliQuickstart, "--no-cache", "--max-concurrency", "2", "--no-ui",
			"--state-dir", filepath.Join(dir, "state"), "--output", filepath.Join(dir, "out"), "--progress-every", "1s"},
			io.Discard, pw)
		_ = pw.Close()
		done <- code
	}()
	deadline := time.AfterFunc(2*time.Minute, cancel) // the run must not outlive the test
	defer deadline.Stop()
	progress := regexp.MustCompile(`^([1-9][0-9]*)/1000 cells`)
	var lines []string
	interrupted := false
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if !interrupted && progress.MatchString(sc.Text()) {
			interrupted = true
			cancel()
		}
	}
	code := <-done
	out := strings.Join(lines, "\n")
	if !interrupted {
		t.Fatalf("no progress line with cells done before the run ended (exit %d):\n%s", code, out)
	}
	if code != exitInterrupted {
		t.Errorf("exit %d, want %d (interrupted):\n%s", code, exitInterrupted, out)
	}
	for _, l := range lines {
		if strings.Contains(l, "ERROR") || strings.Contains(l, "WARN") || strings.Contains(l, "Activity error") ||
			strings.HasPrefix(l, "error:") {
			t.Errorf("an SDK or server log line on the terminal: %s", l)
		}
	}
	// What the terminal does not show is in the log file.
	if fi, err := os.Stat(filepath.Join(dir, "state", logFileName)); err != nil || fi.Size() == 0 {
		t.Errorf("no log file beside the state: %v", err)
	}
}
