package devserver

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/silicolab/silico/logging"
)

const (
	taskQueue = "devserver-test"
	// envCrashDir makes TestCrashHelper run a server on the named state dir.
	envCrashDir = "SILICO_DEVSERVER_CRASH_DIR"
)

var runKey = temporal.NewSearchAttributeKeyKeyword("SilicoRun")

// hello is a trivial workflow.
func hello(_ workflow.Context, name string) (string, error) { return "hello " + name, nil }

// waitSignal blocks until the "go" signal arrives.
func waitSignal(ctx workflow.Context) (string, error) {
	var v string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	return "got " + v, nil
}

// testWriter forwards log output to t.Log until the test's cleanup, then
// drops it: server goroutines may outlive the test by a moment.
type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

// testLogger returns a debug-level logger into t.Log, silenced at cleanup.
func testLogger(t *testing.T) *zap.Logger {
	t.Helper()
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	z, err := logging.New("console", "debug", w)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// startServer starts a server for the test and stops it at cleanup.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start(%+v): %v", opts, err)
	}
	t.Logf("started in %v: frontend %s, UI %q", time.Since(t0).Round(time.Millisecond), s.FrontendHostPort(), s.UIURL())
	t.Cleanup(func() {
		t0 := time.Now()
		if err := s.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		t.Logf("stopped in %v", time.Since(t0).Round(time.Millisecond))
	})
	return s
}

// freePort returns a port that was free a moment ago, to keep tests off the
// default ports that a developer's own server may hold.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// dial connects a client to s and closes it at cleanup.
func dial(t *testing.T, s *Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.FrontendHostPort(),
		Namespace: s.Namespace(),
		Logger:    logging.Temporal(testLogger(t).WithOptions(zap.IncreaseLevel(zap.WarnLevel))),
	})
	if err != nil {
		t.Fatalf("dial %s: %v", s.FrontendHostPort(), err)
	}
	t.Cleanup(c.Close)
	return c
}

// startWorker runs a worker hosting the test workflows until cleanup.
func startWorker(t *testing.T, c client.Client) worker.Worker {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(hello)
	w.RegisterWorkflow(waitSignal)
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

// checkSearchAttributes fails unless every attribute in want is registered.
func checkSearchAttributes(ctx context.Context, t *testing.T, c client.Client, ns string, want map[string]enums.IndexedValueType) {
	t.Helper()
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatalf("ListSearchAttributes: %v", err)
	}
	for name, typ := range want {
		if got, ok := resp.GetCustomAttributes()[name]; !ok || got != typ {
			t.Errorf("search attribute %q = %v (present %v), want %v; custom: %v", name, got, ok, typ, resp.GetCustomAttributes())
		}
	}
}

func TestServer(t *testing.T) {
	// A taken port must be replaced by a free one.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	attrs := map[string]enums.IndexedValueType{
		"SilicoRun":   enums.INDEXED_VALUE_TYPE_KEYWORD,
		"SilicoCells": enums.INDEXED_VALUE_TYPE_INT,
	}
	dir := t.TempDir()
	s := startServer(t, Options{StateDir: dir, Port: busyPort, UIPort: busyPort, SearchAttributes: attrs})

	if hp := s.FrontendHostPort(); hp == busy.Addr().String() || !strings.HasPrefix(hp, "127.0.0.1:") {
		t.Errorf("FrontendHostPort() = %q, want 127.0.0.1 and not the taken port %d", hp, busyPort)
	}
	if u := s.UIURL(); u == "" || strings.HasSuffix(u, ":"+strconv.Itoa(busyPort)) {
		t.Errorf("UIURL() = %q, want a URL off the taken port %d", u, busyPort)
	}
	if ns := s.Namespace(); ns != DefaultNamespace {
		t.Errorf("Namespace() = %q, want %q", ns, DefaultNamespace)
	}
	if _, err := os.Stat(dir + "/" + DBFile); err != nil {
		t.Errorf("database file: %v", err)
	}

	// The state dir is locked while the server runs.
	if s2, err := Start(context.Background(), Options{StateDir: dir, UIPort: -1}); err == nil {
		_ = s2.Stop()
		t.Error("second Start on the same state dir succeeded, want an error")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, s)
	startWorker(t, c)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    "hello",
		TaskQueue:             taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(runKey.ValueSet("r1")),
	}, hello, "silico")
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello silico" {
		t.Fatalf("workflow result = %q, %v; want %q", got, err, "hello silico")
	}
	checkSearchAttributes(ctx, t, c, s.Namespace(), attrs)

	resp, err := http.Get(s.UIURL())
	if err != nil {
		t.Fatalf("GET %s: %v", s.UIURL(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: status %d, want 200", s.UIURL(), resp.StatusCode)
	}
}

func TestInMemoryWithoutUI(t *testing.T) {
	s := startServer(t, Options{Port: freePort(t), UIPort: -1, Namespace: "mem"})
	if u := s.UIURL(); u != "" {
		t.Errorf("UIURL() = %q with the UI disabled, want \"\"", u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, s)
	w := startWorker(t, c)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: taskQueue}, hello, "memory")
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello memory" {
		t.Fatalf("workflow result = %q, %v; want %q", got, err, "hello memory")
	}

	// Stop releases the frontend's port.
	w.Stop()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	l, err := net.Listen("tcp", s.FrontendHostPort())
	if err != nil {
		t.Fatalf("listen on %s after Stop: %v", s.FrontendHostPort(), err)
	}
	l.Close()
}

// TestRestartAfterKill starts a workflow in a child process's server, kills
// that process with SIGKILL, and finishes the workflow on a new server over
// the same state dir. The restart also adds a search attribute.
func TestRestartAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var wfID, runID string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "READY" {
			wfID, runID = f[1], f[2]
			break
		}
	}
	if wfID == "" {
		t.Fatalf("child exited without starting the workflow: %v", sc.Err())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup at all
		t.Fatalf("kill child: %v", err)
	}
	_ = cmd.Wait()

	attrs := map[string]enums.IndexedValueType{
		"SilicoRun":   enums.INDEXED_VALUE_TYPE_KEYWORD,
		"SilicoExtra": enums.INDEXED_VALUE_TYPE_KEYWORD,
	}
	s := startServer(t, Options{StateDir: dir, Port: freePort(t), UIPort: -1, SearchAttributes: attrs})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, s)
	checkSearchAttributes(ctx, t, c, s.Namespace(), attrs)
	// The value set before the crash still reads back: adding an attribute
	// kept the existing ones in their columns.
	desc, err := c.DescribeWorkflow(ctx, wfID, "")
	if err != nil {
		t.Fatalf("DescribeWorkflow(%s): %v", wfID, err)
	}
	if v, ok := desc.TypedSearchAttributes.GetKeyword(runKey); !ok || v != "before-crash" {
		t.Errorf("SilicoRun after restart = %q (set %v), want %q", v, ok, "before-crash")
	}
	startWorker(t, c)

	if err := c.SignalWorkflow(ctx, wfID, "", "go", "after restart"); err != nil {
		t.Fatalf("signal workflow %s after restart: %v", wfID, err)
	}
	run := c.GetWorkflow(ctx, wfID, "")
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "got after restart" {
		t.Fatalf("workflow result = %q, %v; want %q", got, err, "got after restart")
	}
	if run.GetRunID() != runID {
		t.Errorf("run id after restart = %s, want the original %s", run.GetRunID(), runID)
	}
}

// TestCrashHelper is the child process of TestRestartAfterKill: it starts a
// server and a workflow, reports them, and waits to be killed.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(envCrashDir)
	if dir == "" {
		t.Skip("only runs as TestRestartAfterKill's child")
	}
	s := startServer(t, Options{
		StateDir:         dir,
		Port:             freePort(t),
		UIPort:           -1,
		SearchAttributes: map[string]enums.IndexedValueType{"SilicoRun": enums.INDEXED_VALUE_TYPE_KEYWORD},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, s)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    "crash",
		TaskQueue:             taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(runKey.ValueSet("before-crash")),
	}, waitSignal)
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	fmt.Printf("READY %s %s\n", run.GetID(), run.GetRunID())
	time.Sleep(time.Minute) // the parent kills this process long before
	t.Fatal("not killed")
}

// BenchmarkStart measures Start (until the frontend and UI answer) on a new
// state dir and on an existing one; Stop is not timed.
//
//	go test -run '^$' -bench BenchmarkStart -benchtime 5x ./devserver/
func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, dir func() string) {
		for b.Loop() {
			s, err := Start(ctx, Options{StateDir: dir(), Port: 20000 + rand.IntN(20000), UIPort: 40000 + rand.IntN(20000)})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := s.Stop(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.Run("new", func(b *testing.B) { run(b, b.TempDir) })
	b.Run("existing", func(b *testing.B) {
		dir := b.TempDir()
		run(b, func() string { return dir })
	})
}
