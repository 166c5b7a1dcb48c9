// Command workers measures how a run scales with worker processes: a Temporal server in its own process (starter
// dev --no-worker), a simulator process with latency, a results store the workers share (PostgreSQL with
// --postgres, else one SQLite file), and 1, 2, then 3 worker processes, each allowed --max-passes seed passes at
// once. The same grid runs with each count, as a new run; it prints cells/s per worker count as a markdown table.
//
//	go run ./benchmarks/workers [--postgres DSN] [--latency 200ms] [--max-passes 1]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/store/storetest"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workflows"
)

func main() {
	pg := flag.String("postgres", os.Getenv(storetest.EnvPostgres), "results store shared by the workers (default: a SQLite file)")
	latency := flag.Duration("latency", 200*time.Millisecond, "simulator latency")
	passes := flag.Int("max-passes", 1, "seed passes each worker runs at once")
	counts := flag.String("workers", "1,2,3", "worker counts to measure")
	flag.Parse()
	if err := run(*pg, *latency, *passes, *counts); err != nil {
		log.Fatal(err)
	}
}

func run(pg string, latency time.Duration, passes int, counts string) error {
	dir, err := os.MkdirTemp("", "silico-workers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins := map[string]string{}
	for _, name := range []string{"starter", "worker", "simulator"} {
		bins[name] = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", bins[name], "./cmd/"+name)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", name, err)
		}
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGINT)
			_ = p.Wait()
		}
	}()
	start := func(name string, args ...string) (*exec.Cmd, *strings.Builder, error) {
		var out strings.Builder
		cmd := exec.Command(bins[name], args...)
		cmd.Dir = dir
		cmd.Stdout = &out
		cmd.Stderr = &out
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		procs = append(procs, cmd)
		return cmd, &out, nil
	}
	wait := func(out *strings.Builder, what string) error {
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(out.String(), what) {
				return nil
			}
		}
		return fmt.Errorf("no %q in:\n%s", what, out.String())
	}

	_, simOut, err := start("simulator", "--addr", "127.0.0.1:0", "--latency", latency.String())
	if err != nil {
		return err
	}
	if err := wait(simOut, "http://"); err != nil {
		return err
	}
	simURL := strings.TrimSpace(strings.SplitN(simOut.String(), "\n", 2)[0]) + "/v1"
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	_, devOut, err := start("starter", "dev", "--no-worker", "--no-ui", "--port", strconv.Itoa(port), "--state-dir", filepath.Join(dir, "state"))
	if err != nil {
		return err
	}
	if err := wait(devOut, "Temporal server"); err != nil {
		return err
	}
	storeDSN := filepath.Join(dir, "results.db")
	where := "one SQLite file"
	if pg != "" {
		storeDSN, where = pg, "PostgreSQL"
	}
	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		return err
	}
	defer c.Close()

	spec := bench.GridSpec(1, 6, 20, 10) // 1,200 cells in 6 passes
	spec.Models[0].Provider, spec.Models[0].BaseURL = "openai", simURL
	spec.Run.MaxParallelPasses, spec.Run.MaxConcurrency = 6, 8
	spec.Run.Cache = "off" // every run calls the simulator
	fmt.Printf("machine: %s\n\n", bench.Machine())
	fmt.Printf("### Workers: %d cells in 6 passes, simulator latency %s, max_concurrency 8, max_parallel_passes 6, --max-passes %d per worker, store: %s\n\n",
		spec.NumCells(), latency, passes, where)
	fmt.Println("| workers | wall | cells/s | vs 1 worker |")
	fmt.Println("|---:|---:|---:|---:|")
	var workers []*exec.Cmd
	var base float64
	for _, f := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return err
		}
		for len(workers) < n {
			w, out, err := start("worker", "--address", addr, "--store", storeDSN, "--metrics-addr", "", "--max-passes", strconv.Itoa(passes),
				"--output-root", filepath.Join(dir, "out"))
			if err != nil {
				return err
			}
			if err := wait(out, "worker started"); err != nil {
				return err
			}
			workers = append(workers, w)
		}
		in, err := wire.NewInput(&spec, "", "")
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		t0 := time.Now()
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("workers-%d", n), TaskQueue: wire.TaskQueue,
			WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE}, workflows.ExperimentWorkflow, in)
		if err != nil {
			cancel()
			return err
		}
		var res wire.Result
		err = r.Get(ctx, &res)
		cancel()
		if err != nil {
			return err
		}
		wall := time.Since(t0)
		rate := float64(spec.NumCells()) / wall.Seconds()
		if base == 0 {
			base = rate
		}
		if res.Summary.OK+res.Summary.Unparsed != spec.NumCells() {
			b, _ := json.Marshal(res.Summary)
			return fmt.Errorf("%d workers: not every cell answered: %s", n, b)
		}
		if err := bench.NoneCached(fmt.Sprintf("workers-%d", n), res.Summary); err != nil {
			return err
		}
		fmt.Printf("| %d | %s | %.1f | %.2f× |\n", n, wall.Round(100*time.Millisecond), rate, rate/base)
	}
	fmt.Printf("\nload %s\n", bench.Load())
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
