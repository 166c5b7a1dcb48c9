package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/store/storetest"
)

var temporalServerBuild, sqlToolBuild, operatorBuild build

// TestProductionPathOnPostgres runs what deploy/temporal runs in containers, as processes: the Temporal server
// binary and temporal-sql-tool built from the module silico pins (go.temporal.io/server), Temporal's schema in
// PostgreSQL databases of the test's own made by deploy/temporal/scripts/setup-schema.sh, the server on them
// with deploy/temporal/dynamicconfig, the namespace and search attributes made by scripts/bootstrap.sh (run
// once: it must wait for the namespace by itself), then a grid on three cmd/worker processes sharing a
// PostgreSQL results store while two workers and the server are killed with SIGKILL and restarted. Every cell
// must be recorded, with the cell columns of a run in one process, and no answered call asked again beyond the
// calls in flight at a kill.
//
// The script's temporal CLI is tests/operatorcli (the same operator commands, seconds to build from the pinned
// SDK); SILICO_TEST_TEMPORAL_CLI=/path/to/temporal runs it with the real CLI instead.
func TestProductionPathOnPostgres(t *testing.T) {
	base := os.Getenv(storetest.EnvPostgres)
	if base == "" {
		t.Skipf("%s is not set: the Temporal server on PostgreSQL is not tested", storetest.EnvPostgres)
	}
	pg, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", storetest.EnvPostgres, err)
	}

	// The binaries, built side by side from this module, so the server and the schema tool are the pinned ones.
	builds := []struct {
		b         *build
		name, pkg string
	}{
		{&temporalServerBuild, "temporal-server", "go.temporal.io/server/cmd/server"},
		{&sqlToolBuild, "temporal-sql-tool", "go.temporal.io/server/cmd/tools/sql"},
		{&operatorBuild, "operatorcli", "github.com/silicolab/silico/tests/operatorcli"},
		{&workerBuild, "worker", "github.com/silicolab/silico/cmd/worker"},
		{&starterBuild, "starter", "github.com/silicolab/silico/cmd/starter"},
		{&simulatorBuild, "simulator", "github.com/silicolab/silico/cmd/simulator"},
	}
	var wg sync.WaitGroup
	for _, b := range builds {
		wg.Go(func() { b.b.do(t, b.name, b.pkg) })
	}
	wg.Wait()
	for _, b := range builds {
		if b.b.err != nil {
			t.Fatal(b.b.err)
		}
	}
	serverBin, sqlTool, cli, worker, starter := temporalServerBuild.path, sqlToolBuild.path, operatorBuild.path, workerBuild.path, starterBuild.path
	if real := os.Getenv("SILICO_TEST_TEMPORAL_CLI"); real != "" {
		cli = real
	}
	modDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server").Output()
	if err != nil {
		t.Fatalf("go list -m go.temporal.io/server: %v", err)
	}
	deploy, err := filepath.Abs(filepath.Join("..", "deploy", "temporal"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	// Databases of the test's own, dropped at the end (after the server is killed: cleanups run last first).
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	prefix := "silico_pp_" + hex.EncodeToString(b)
	dbs := map[string]string{"DBNAME": prefix + "_temporal", "VISIBILITY_DBNAME": prefix + "_visibility", "SILICO_DBNAME": prefix + "_store"}
	t.Cleanup(func() {
		for _, db := range dbs {
			storetest.Exec(t, base, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		}
	})
	host, port := pg.Hostname(), pg.Port()
	if port == "" {
		port = "5432"
	}
	password, _ := pg.User.Password()
	env := append(cleanEnv(), "POSTGRES_SEEDS="+host, "DB_PORT="+port, "POSTGRES_USER="+pg.User.Username(),
		"SQL_PASSWORD="+password, "TEMPORAL_SQL_TOOL="+sqlTool,
		"SCHEMA_DIR="+filepath.Join(strings.TrimSpace(string(modDir)), "schema", "postgresql", "v12"))
	for k, v := range dbs {
		env = append(env, k+"="+v)
	}
	script(t, env, filepath.Join(deploy, "scripts", "setup-schema.sh"))

	// The server on free loopback ports, the same ones after a restart.
	conf := serverConfig{Host: host, Port: port, User: pg.User.Username(), Password: password,
		DB: dbs["DBNAME"], VisibilityDB: dbs["VISIBILITY_DBNAME"], DynamicConfig: filepath.Join(deploy, "dynamicconfig", "silico.yaml")}
	conf.Ports = freeLowPorts(t, 9)
	conf.write(t, filepath.Join(dir, "config", "silico.yaml"))
	addr := "127.0.0.1:" + strconv.Itoa(conf.Ports[0])
	ctx := withTimeout(t, 5*time.Minute)
	c, err := client.NewLazyClient(client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	startServer := func() *proc {
		p := startProc(t, dir, serverBin, "--root", dir, "--config", "config", "--env", "silico", "--allow-no-auth", "start")
		poll(t, 90*time.Second, 100*time.Millisecond, "the Temporal server to serve", func() bool {
			if p.exited() {
				t.Fatalf("the Temporal server exited:\n%s", p.dump())
			}
			hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := c.CheckHealth(hctx, &client.CheckHealthRequest{})
			return err == nil
		})
		return p
	}
	server := startServer()

	// bootstrap.sh, once: the namespace is new, so the script itself must wait until the server serves it.
	out := script(t, append(cleanEnv(), "TEMPORAL_ADDRESS="+addr, "TEMPORAL_NAMESPACE=default", "TEMPORAL_CLI="+cli,
		"BOOTSTRAP_TIMEOUT=120"), filepath.Join(deploy, "scripts", "bootstrap.sh"))
	t.Logf("bootstrap.sh:\n%s", out)
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"}); err != nil {
		t.Fatalf("namespace default after bootstrap.sh: %v", err)
	}
	if missing := missingAttrs(t, ctx, c); len(missing) != 0 {
		t.Fatalf("search attributes %v missing after bootstrap.sh", missing)
	}

	// The grid: a simulator process whose rpm equals the spec's, and three workers on one PostgreSQL store.
	const rpm = 2400 // 40 calls/s
	simLog := filepath.Join(dir, "sim.jsonl")
	simURL, simProc := startSimulator(t, dir, simLog, "--latency", "60ms", "--jitter", "30ms", "--rpm", strconv.Itoa(rpm), "--burst", "0.05")
	spec := gridSpec(1, 4, 20, 10) // 800 cells in 4 passes: about 20 s at 40 calls/s
	spec.Name = "production path"
	spec.Models[0].Provider, spec.Models[0].BaseURL, spec.Models[0].RPM = "sim", simURL, rpm
	spec.Run.MaxParallelPasses, spec.Run.MaxConcurrency = 3, 8
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	storeURL := *pg
	storeURL.Path = "/" + dbs["SILICO_DBNAME"]
	storeDSN := storeURL.String()
	startWorker := func() *proc {
		return startProc(t, dir, worker, "--address", addr, "--store", storeDSN, "--output-root", filepath.Join(dir, "out"),
			"--metrics-addr", "", "--max-passes", "2")
	}
	workers := []*proc{startWorker(), startWorker(), startWorker()}
	id := startDetached(t, dir, starter, addr)

	// Kills at fixed points of the run's progress (requests the simulator logged): a worker, the server, another
	// worker. Each is replaced before the next.
	status := func() enums.WorkflowExecutionStatus {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		d, err := c.DescribeWorkflowExecution(dctx, id, "")
		if err != nil {
			return enums.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED // the server is restarting
		}
		return d.GetWorkflowExecutionInfo().GetStatus()
	}
	// waitFor polls until done; the run must not fail, nor complete unless final says that is what it waits for.
	waitFor := func(what string, final bool, done func(enums.WorkflowExecutionStatus) bool) {
		poll(t, 3*time.Minute, 50*time.Millisecond, what, func() bool {
			switch st := status(); st {
			case enums.WORKFLOW_EXECUTION_STATUS_RUNNING, enums.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED:
			case enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
				if !final {
					t.Fatalf("run %s completed before %s: make the grid larger", id, what)
				}
			default:
				t.Fatalf("run %s is %v before %s; simulator log: %d lines", id, st, what, countLines(simLog))
			}
			return done(status())
		})
	}
	var kills []time.Time
	start := time.Now()
	for _, k := range []struct {
		after  int
		worker int // -1: the server
	}{{150, 0}, {350, -1}, {550, 1}} {
		waitFor(fmt.Sprintf("%d requests", k.after), false, func(enums.WorkflowExecutionStatus) bool { return countLines(simLog) >= k.after })
		kills = append(kills, time.Now())
		if k.worker < 0 {
			_ = server.cmd.Process.Kill()
			server.wait(t, 10*time.Second)
			server = startServer()
			t.Logf("server killed and back after %d requests", k.after)
			continue
		}
		_ = workers[k.worker].cmd.Process.Kill()
		workers[k.worker].wait(t, 10*time.Second)
		workers[k.worker] = startWorker()
		t.Logf("worker %d killed and replaced after %d requests", k.worker, k.after)
	}
	waitFor("the run to complete", true, func(st enums.WorkflowExecutionStatus) bool { return st == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED })
	t.Logf("run %s done %s after it started, through %d kills", id, time.Since(start).Round(time.Second), len(kills))

	// Every cell, with the columns of a run in one process.
	checkColumnsOfOneProcessRun(t, dir, starter, id, storeDSN, spec, "production-path-reference")

	// Nothing paid twice beyond the calls in flight at a kill, and the model's rpm held across the workers.
	if err := simProc.cmd.Process.Signal(os.Interrupt); err == nil {
		simProc.wait(t, 30*time.Second)
	}
	again, limited := askedAgain(t, simLog, kills, 100*time.Millisecond)
	if limited > 0 {
		t.Errorf("the simulator refused %d calls with 429: the workers together exceeded the model's rpm", limited)
	}
	if len(again) > 0 {
		t.Errorf("%d answered calls were asked again outside a kill's grace: %v", len(again), again[:min(5, len(again))])
	}
}

// script runs a shell script with env and fails the test unless it exits 0 within two minutes; it returns the
// script's output.
func script(t *testing.T, env []string, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", path)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(path), err, tail(out.String(), 4000))
	}
	return out.String()
}

// askedAgain reads a simulator request log and returns the chat calls asked again after an answer had landed,
// unless a kill came within grace after that answer (it was then in flight: not yet recorded), and the number
// of calls refused with 429.
func askedAgain(t *testing.T, simLog string, kills []time.Time, grace time.Duration) (again []string, limited int) {
	t.Helper()
	firstAnswer := map[string]time.Time{}
	for _, e := range readRequestLog(t, simLog) {
		if e.Endpoint != "/v1/chat/completions" || e.Cell == "" {
			continue
		}
		if e.Status == http.StatusTooManyRequests {
			limited++
		}
		at, answered := firstAnswer[e.Cell]
		if !answered {
			if e.Status == http.StatusOK && e.Fault == "" {
				firstAnswer[e.Cell] = e.Done
			}
			continue
		}
		inFlight := false
		for _, k := range kills {
			if !at.Before(k.Add(-grace)) && at.Before(e.Time) && k.Before(e.Time) {
				inFlight = true
			}
		}
		if !inFlight {
			again = append(again, fmt.Sprintf("%s (answered at %s, asked again at %s)", e.Cell, at.Format("15:04:05.000"), e.Time.Format("15:04:05.000")))
		}
	}
	return again, limited
}

// freeLowPorts returns n distinct loopback ports below 32768 that were free a moment ago: the server stores its
// membership ports in a smallint column, and the kernel's ephemeral ports (what port 0 gives) lie above it.
func freeLowPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	seen := map[int]bool{}
	for try := 0; len(ports) < n; try++ {
		if try > 1000 {
			t.Fatalf("found only %d free ports below 32768", len(ports))
		}
		p := 20000 + mrand.IntN(12000)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		_ = l.Close()
		ports = append(ports, p)
	}
	return ports
}

// serverConfig is the Temporal server's configuration: PostgreSQL persistence and visibility, every service on
// 127.0.0.1 (Ports: the frontend's gRPC, membership and HTTP ports, then gRPC and membership of history,
// matching and the worker service).
type serverConfig struct {
	Host, Port, User, Password string
	DB, VisibilityDB           string
	DynamicConfig              string
	Ports                      []int
}

const serverConfigTemplate = `log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
{{- range $name, $db := dict "default" .DB "visibility" .VisibilityDB }}
    {{ $name }}:
      sql:
        pluginName: postgres12
        databaseName: {{ $db }}
        connectAddr: "{{ $.Host }}:{{ $.Port }}"
        connectProtocol: tcp
        user: {{ printf "%q" $.User }}
        password: {{ printf "%q" $.Password }}
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h
{{- end }}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:
    rpc: {grpcPort: {{ index .Ports 0 }}, membershipPort: {{ index .Ports 1 }}, httpPort: {{ index .Ports 2 }}, bindOnLocalHost: true}
  history:
    rpc: {grpcPort: {{ index .Ports 3 }}, membershipPort: {{ index .Ports 4 }}, bindOnLocalHost: true}
  matching:
    rpc: {grpcPort: {{ index .Ports 5 }}, membershipPort: {{ index .Ports 6 }}, bindOnLocalHost: true}
  worker:
    rpc: {grpcPort: {{ index .Ports 7 }}, membershipPort: {{ index .Ports 8 }}, bindOnLocalHost: true}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:{{ index .Ports 0 }}"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: {{ printf "%q" .DynamicConfig }}
  pollInterval: 10s
`

func (c serverConfig) write(t *testing.T, path string) {
	t.Helper()
	tmpl := template.Must(template.New("config").Funcs(template.FuncMap{"dict": func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}}).Parse(serverConfigTemplate))
	var b bytes.Buffer
	if err := tmpl.Execute(&b, c); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// quietLogger drops the SDK client's log lines (connection errors while the server restarts).
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
