// Command worker hosts silico's ExperimentWorkflow and its activities on a Temporal cluster. Run as many as you
// like: passes spread over them, and the workflow shares each model's limits among the passes running at once.
//
// API keys are read from this process's environment, under the variable names the specs give (api_key_env).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/silicolab/silico/logging"
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
	zl, err := logging.New(*logFormat, *logLevel, stderr)
	if err != nil {
		return usageError{err}
	}
	defer func() { _ = zl.Sync() }()

	st, err := store.OpenSQLite(ctx, *storePath)
	if err != nil {
		return fmt.Errorf("open results store: %w", err)
	}
	defer st.Close()
	c, err := client.DialContext(ctx, client.Options{HostPort: *address, Namespace: *namespace, Logger: logging.Temporal(zl)})
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", *address, err)
	}
	defer c.Close()
	w, err := workerhost.New(c, workerhost.Config{
		Store:               st,
		Getenv:              os.Getenv,
		SimURL:              *simURL,
		OutputRoot:          *output,
		MaxConcurrentPasses: *passes,
	})
	if err != nil {
		return err
	}
	zl.Info("worker started", zap.String("address", *address), zap.String("namespace", *namespace),
		zap.String("task_queue", workflows.TaskQueue), zap.String("store", *storePath))
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

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
