package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/wire"
)

// binDir holds binaries built once for the whole package (see starterBin).
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	d, err := os.MkdirTemp("", "silico-tests-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = d
	code := m.Run()
	_ = os.RemoveAll(d)
	os.Exit(code)
}

// build is one binary built once per test binary, only when a test needs it.
type build struct {
	once sync.Once
	path string
	err  error
}

var starterBuild, simulatorBuild, workerBuild build

// starterBin builds cmd/starter once per test binary (only when a test needs it) and returns its path.
func starterBin(t *testing.T) string {
	t.Helper()
	return buildBin(t, &starterBuild, "starter", "github.com/silicolab/silico/cmd/starter")
}

// workerBin builds cmd/worker once per test binary and returns its path.
func workerBin(t *testing.T) string {
	t.Helper()
	return buildBin(t, &workerBuild, "worker", "github.com/silicolab/silico/cmd/worker")
}

// simulatorBin builds cmd/simulator once per test binary and returns its path.
func simulatorBin(t *testing.T) string {
	t.Helper()
	return buildBin(t, &simulatorBuild, "simulator", "github.com/silicolab/silico/cmd/simulator")
}

func buildBin(t *testing.T, b *build, name, pkg string) string {
	t.Helper()
	b.do(t, name, pkg)
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// do builds pkg into binDir/name once; it does not fail the test, so that builds can run in goroutines.
func (b *build) do(t *testing.T, name, pkg string) {
	b.once.Do(func() {
		start := time.Now()
		path := filepath.Join(binDir, name)
		out, err := exec.Command("go", "build", "-o", path, pkg).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			return
		}
		b.path = path
		t.Logf("built %s in %s", pkg, time.Since(start).Round(time.Millisecond))
	})
}

// freePort returns a loopback port that was free a moment ago. The embedded server falls back to another free
// port when it was taken in between, so a race costs nothing but the port number.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// proc is a subprocess whose output is collected; t.Cleanup kills it if the test did not wait for it.
type proc struct {
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{}
	err    error
}

// startProc starts bin with args in dir, with an environment that keeps it in embedded mode.
func startProc(t *testing.T, dir, bin string, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, dir, bin, nil, args...)
}

// startProcEnv is startProc with env ("NAME=value") added to the process's environment.
func startProcEnv(t *testing.T, dir, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(cleanEnv(), env...)
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// cleanEnv is the test's environment without the variables that would point the starter at another server.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TEMPORAL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s did not exit within %s\nstdout:\n%s\nstderr:\n%s", p.cmd.Args, d, p.stdout.String(), tail(p.stderr.String(), 4000))
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	default:
		t.Fatalf("%s: %v", p.cmd.Args, p.err)
		return -1
	}
}

// dump is the process's output for failure messages.
func (p *proc) dump() string {
	return fmt.Sprintf("stdout:\n%s\nstderr (tail):\n%s", p.stdout.String(), tail(p.stderr.String(), 4000))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// poll calls cond every interval until it returns true or the deadline passes.
func poll(t *testing.T, d, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(interval)
	}
}

// copyDir copies the regular files of src (not recursively) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// countLines counts the complete lines of a file; a missing file has none.
func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// logEntry is the part of a simulator request-log line (a sim.Request) the tests read.
type logEntry struct {
	Time     time.Time `json:"time"`
	Done     time.Time `json:"done"`
	Endpoint string    `json:"endpoint"`
	Cell     string    `json:"cell"`
	Status   int       `json:"status"`
	Fault    string    `json:"fault"`
}

// readRequestLog reads a simulator request log (JSON lines). A last line cut by a kill is ignored.
func readRequestLog(t *testing.T, path string) []logEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []logEntry
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a partial last line (no newline) is a write cut by SIGKILL
		}
		if err != nil {
			t.Fatal(err)
		}
		var e logEntry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s:%d: %v: %q", path, n, err, line)
		}
		out = append(out, e)
	}
	return out
}

// withTimeout is a context for one test step.
func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// specInput is the workflow input that starts a run of spec.
// A spec built in Go without run.seed_per_cell gets it as a spec file would (true), so that a run of it and a
// run of the same spec written to a file and started by the starter send the same seeds.
func specInput(t *testing.T, spec experiment.Spec) wire.Input {
	t.Helper()
	if spec.Run.SeedPerCell == nil {
		on := true
		spec.Run.SeedPerCell = &on
	}
	in, err := wire.NewInput(&spec, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return in
}
