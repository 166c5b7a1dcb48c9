// Command worker hosts silico's ExperimentWorkflow and its activities on a Temporal cluster. Run as many as you
// like: passes spread over them, and the workflow shares each model's limits among the passes running at once.
//
// API keys are read from this process's environment, under the variable names the specs give (api_key_env), and
// only from variables the allow-list admits (--api-key-env-allow, default names ending in _API_KEY): anyone who
// can start a workflow names the variable and the server it goes to. Outputs stay under --output-root unless
// --output-anywhere is given. Models with provider sim need a simulator: --sim runs one in this process,
// --sim-url names one elsewhere.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/logging"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/workerhost"
	"github.com/silicolab/silico/workflows"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "Error:", err)
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	address := fs.String("address", envOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
	namespace := fs.String("namespace", envOr("TEMPORAL_NAMESPACE", "default"), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	storePath := fs.String("store", ".silico/results.db", "results store (SQLite file)")
	output := fs.String("output-root", "out", "where runs without an output directory are exported: <output-root>/<run id>")
	simURL := fs.String("sim-url", os.Getenv("SILICO_SIM_URL"), "base URL of the simulator for models with provider sim (env SILICO_SIM_URL)")
	simOn := fs.Bool("sim", false, "run the model simulator in this process for models with provider sim (instead of --sim-url)")
	simLatency := fs.Duration("sim-latency", 0, "with --sim: latency of every simulated call")
	simJitter := fs.Duration("sim-jitter", 0, "with --sim: uniform ± jitter around --sim-latency")
	keyAllow := fs.String("api-key-env-allow", envOr("SILICO_API_KEY_ENV_ALLOW", llm.DefaultKeyEnvAllow),
		"comma-separated glob patterns of the environment variables a spec's api_key_env may name; \"\" allows none (env SILICO_API_KEY_ENV_ALLOW)")
	outputAnywhere := fs.Bool("output-anywhere", false, "let a run's output directory lie outside --output-root")
	passes := fs.Int("max-passes", 16, "seed passes this worker runs at once")
	logFormat := fs.String("log-format", "console", "log format: json or console")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	if *simOn && *simURL != "" {
		return usageError{errors.New("give --sim or --sim-url, not both")}
	}
	allow, err := llm.ParseKeyEnvAllow(*keyAllow)
	if err != nil {
		return usageError{fmt.Errorf("--api-key-env-allow: %w", err)}
	}
	zl, err := logging.New(*logFormat, *logLevel, stderr)
	if err != nil {
		return usageError{err}
	}
	defer func() { _ = zl.Sync() }()

	if *simOn {
		url, stopSim, err := startSim(sim.Config{Latency: sim.Latency{Fixed: *simLatency, Jitter: *simJitter}})
		if err != nil {
			return err
		}
		defer stopSim()
		*simURL = url
		zl.Info("simulator started", zap.String("url", url))
	} else if *simURL == "" {
		zl.Warn("no simulator: runs whose models use provider sim will fail (no_simulator); start the worker with --sim or --sim-url")
	}

	st, err := store.Open(ctx, *storePath)
	if err != nil {
		return fmt.Errorf("open results store: %w", err)
	}
	defer st.Close()
	c, err := client.DialContext(ctx, client.Options{HostPort: *address, Namespace: *namespace, Logger: logging.Temporal(zl)})
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", *address, err)
	}
	defer c.Close()
	if err := workerhost.EnsureSearchAttributes(ctx, c, *namespace); err != nil {
		// Runs work without them; starters then do not set them.
		zl.Warn("silico's search attributes are missing (runs work, but cannot be searched by experiment): " + err.Error())
	}
	w, err := workerhost.New(c, workerhost.Config{
		Store:               st,
		Getenv:              os.Getenv,
		SimURL:              *simURL,
		SimSettingsFixed:    true,
		OutputRoot:          *output,
		OutputAnywhere:      *outputAnywhere,
		KeyEnvAllow:         allow,
		MaxConcurrentPasses: *passes,
	})
	if err != nil {
		return err
	}
	zl.Info("worker started", zap.String("address", *address), zap.String("namespace", *namespace),
		zap.String("task_queue", workflows.TaskQueue), zap.String("store", *storePath),
		zap.Strings("api_key_env_allow", allow), zap.String("output_root", *output), zap.Bool("output_anywhere", *outputAnywhere))
	// worker.Run stops on the channel closing; the context's end is that signal.
	if err := w.Run(ctxInterrupt(ctx)); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// ctxInterrupt turns a context's end into the worker's interrupt channel.
func ctxInterrupt(ctx context.Context) <-chan any {
	ch := make(chan any)
	context.AfterFunc(ctx, func() { close(ch) })
	return ch
}

// startSim serves the model simulator on a free loopback port and returns its base URL and its stop function.
func startSim(cfg sim.Config) (string, func(), error) {
	h, err := sim.New(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("start simulator: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulator: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // ends with http.ErrServerClosed on Shutdown
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
	return "http://" + ln.Addr().String() + "/v1", stop, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
