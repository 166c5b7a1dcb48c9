package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// envAsStarter makes the test binary run as the starter command (the helper-process pattern): the tests below
// drive separate starter processes as a user's terminals do, without building another binary.
const envAsStarter = "SILICO_TEST_AS_STARTER"

func TestMain(m *testing.M) {
	if os.Getenv(envAsStarter) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		context.AfterFunc(ctx, stop)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// starterProc is a starter process started in dir, its output collected.
type starterProc struct {
	cmd      *exec.Cmd
	out, err syncBuffer
	done     chan struct{}
	exited   time.Time
}

// syncBuffer is a bytes.Buffer that the process's output copier writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func startStarter(t *testing.T, dir string, args ...string) *starterProc {
	t.Helper()
	p := &starterProc{done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), envAsStarter+"=1")
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.exited = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits up to d for the process to exit and returns its exit code, failing the test when it does not exit.
func (p *starterProc) wait(t *testing.T, d time.Duration, what string) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("%s has not exited within %s\nstdout:\n%s\nstderr:\n%s", what, d, p.out.String(), p.err.String())
		return -1
	}
}

// copyQuickstart copies the quickstart's files into a new directory.
func copyQuickstart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Dir(cliQuickstart)
	for _, f := range []string{"experiment.yaml", "ipip50.csv"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCancelFromASecondTerminal runs a copy of the quickstart (300 ms a call) in one starter process and, from
// another in the same directory, lists it as running and cancels it: cancel returns with exit 0 within 10 s of
// the run's end, and both processes have exited. Ten times over, each in a fresh directory.
func TestCancelFromASecondTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 30 starter processes")
	}
	for i := range 10 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dir := copyQuickstart(t)
			args := []string{"run", "experiment.yaml", "--no-cache", "--port", "0", "--ui-port", "0"}
			if i == 0 {
				args = append(args, "--new") // the command its cancellation names resumes this run, not another fresh one
			}
			runP := startStarter(t, dir, args...)
			var id string
			deadline := time.Now().Add(2 * time.Minute)
			for id == "" {
				if time.Now().After(deadline) {
					t.Fatalf("the run was never listed as running\nrun stderr:\n%s", runP.err.String())
				}
				select {
				case <-runP.done:
					t.Fatalf("starter run exited before it was cancelled:\n%s\n%s", runP.out.String(), runP.err.String())
				case <-time.After(200 * time.Millisecond):
				}
				if rows := listedRuns(t, dir); len(rows) == 1 && rows[0].Status == "running" && rows[0].Recorded > 0 {
					id = rows[0].ID
				}
			}
			cancelP := startStarter(t, dir, "cancel", id)
			code := cancelP.wait(t, 2*time.Minute, "starter cancel")
			if code != exitOK || !strings.Contains(cancelP.out.String(), "cancelled: ") {
				t.Fatalf("starter cancel: exit %d\nstdout:\n%s\nstderr:\n%s", code, cancelP.out.String(), cancelP.err.String())
			}
			if c := runP.wait(t, time.Minute, "starter run"); c != exitError || !strings.Contains(runP.err.String(), "was cancelled") {
				t.Errorf("starter run: exit %d, stderr:\n%s\nwant 1 saying the run was cancelled", c, runP.err.String())
			}
			out, _, _ := runStarterIn(t, dir, "runs", "--json")
			var rows []runRow
			if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0].Status != "cancelled" {
				t.Fatalf("starter runs after the cancel: %v\n%s", err, out)
			}
			// The run's starter exits once the run has ended; cancel returns within 10 s of that.
			if lag := cancelP.exited.Sub(runP.exited); lag > 10*time.Second {
				t.Errorf("starter cancel exited %s after the run's starter did, want at most 10s", lag.Round(time.Millisecond))
			}
			if i > 0 {
				return
			}
			// The command the cancelled run names resumes it: the same run, to its end.
			resume := pastedCommand(t, runP.err.String(), "what it recorded is kept:")
			out, errOut, code := runStarterIn(t, dir, append(resume, "--port", "0", "--ui-port", "0")...)
			if code != exitOK || !strings.Contains(out, "run "+id) || !strings.Contains(out, "Done: 1000 cells") {
				t.Fatalf("%v: exit %d; want run %s resumed to its end\n%s\n%s", resume, code, id, out, errOut)
			}
			if list, _, _ := runStarterIn(t, dir, "runs", "--json"); strings.Count(list, `"id"`) != 1 || !strings.Contains(list, `"status": "completed"`) {
				t.Errorf("after resuming, want the one run, completed:\n%s", list)
			}
		})
	}
}

// runStarterIn runs a starter process in dir to its end (within a minute) and returns its output and exit code.
func runStarterIn(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := startStarter(t, dir, args...)
	code = p.wait(t, time.Minute, "starter "+strings.Join(args, " "))
	return p.out.String(), p.err.String(), code
}
