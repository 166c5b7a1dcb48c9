// Command worker hosts silico's ExperimentWorkflow and its activities on a Temporal cluster. Run as many as you
// like: passes spread over them, and the workflow shares each model's limits among the passes running at once.
//
// API keys are read from this process's environment, under the variable names the specs give (api_key_env).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/buildinfo"
	"github.com/silicolab/silico/cmd/internal/flagerr"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/logging"
	"github.com/silicolab/silico/metrics"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/temporalclient"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workerhost"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(os.Stderr, "Run 'worker --help' for the flags.")
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError marks invalid flags or arguments (exit code 2).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// defaultStore is the results store when neither --store nor store.EnvDSN names one.
const defaultStore = store.DefaultDir + "/" + store.FileName

// options are the worker's settings, from its flags and environment.
type options struct {
	address, namespace string
	cluster            temporalclient.Flags
	store              string
	output             string
	simURL             string
	simOn              bool
	simLatency         time.Duration
	simJitter          time.Duration
	keyAllow           string
	outputAnywhere     bool
	passes             int
	logFormat          string
	logLevel           string
	metricsAddr        string
}

// defaultMetricsAddr is where the worker serves Prometheus metrics unless --metrics-addr says otherwise.
const defaultMetricsAddr = "127.0.0.1:9464"

// newFlagSet returns the worker's flags and the options they fill. getenv supplies the defaults that come from
// the environment. Secrets (the store's DSN may hold a password, TEMPORAL_API_KEY is one) are not made flag
// defaults, so that --help never prints them; resolve reads them after parsing.
func newFlagSet(getenv func(string) string) (*pflag.FlagSet, *options) {
	o := new(options)
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&o.address, "address", envOr(getenv, temporalclient.EnvAddress, "127.0.0.1:7233"), "Temporal frontend host:port (env "+temporalclient.EnvAddress+")")
	fs.StringVar(&o.namespace, "namespace", envOr(getenv, temporalclient.EnvNamespace, temporalclient.DefaultNamespace), "Temporal namespace (env "+temporalclient.EnvNamespace+")")
	o.cluster.Register(fs)
	fs.StringVar(&o.store, "store", "", "results store: a SQLite file, or a postgres:// URL that workers on several machines share "+
		"(env "+store.EnvDSN+"; default "+defaultStore+")")
	fs.StringVar(&o.output, "output-root", experiment.DefaultOutputRoot, "where runs without an output directory are exported: <output-root>/<run id>")
	fs.StringVar(&o.simURL, "sim-url", getenv(envSimURL), "base URL of the simulator for models with provider sim (env "+envSimURL+")")
	fs.BoolVar(&o.simOn, "sim", false, "run the model simulator in this process for models with provider sim (instead of --sim-url)")
	fs.DurationVar(&o.simLatency, "sim-latency", 0, "with --sim: latency of every simulated call")
	fs.DurationVar(&o.simJitter, "sim-jitter", 0, "with --sim: uniform ± jitter around --sim-latency")
	fs.StringVar(&o.keyAllow, "api-key-env-allow", llm.KeyEnvAllowSetting(getenv),
		"comma-separated glob patterns of the environment variables a spec's api_key_env may name; \"\" allows none (env "+llm.KeyEnvAllowVar+")")
	fs.BoolVar(&o.outputAnywhere, "output-anywhere", false, "let a run's output directory lie outside --output-root")
	fs.IntVar(&o.passes, "max-passes", 16, "seed passes this worker runs at once")
	fs.StringVar(&o.logFormat, "log-format", "console", "log format: json or console")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.metricsAddr, "metrics-addr", defaultMetricsAddr, "serve Prometheus metrics (the Temporal SDK's) at http://<addr>/metrics; "+
		"0.0.0.0:9464 to let a scraper on another host in, empty for none")
	return fs, o
}

// envSimURL is the simulator's URL when --sim-url is not given.
const envSimURL = "SILICO_SIM_URL"

// envVars lists the environment variables the worker itself reads. It also reads the variables the specs name
// for API keys (api_key_env), whatever they are called.
var envVars = append([]string{store.EnvDSN, envSimURL, llm.KeyEnvAllowVar}, temporalclient.EnvVars...)

// newCommand is the worker's command line: its flags, --help and --version. Help and the version go to stdout,
// the logs to stderr.
func newCommand(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	fs, o := newFlagSet(getenv)
	cmd := &cobra.Command{
		Use:   "worker [flags]",
		Short: "Host silico's ExperimentWorkflow and its activities on a Temporal cluster",
		Long: `Worker hosts silico's ExperimentWorkflow and its activities on a Temporal cluster. Run as many as you like:
passes spread over them. API keys are read from this process's environment, under the variable names the specs
give (api_key_env). Exit codes: 0 after a clean stop, 1 error, 2 invalid usage.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unexpected arguments %q: the worker takes flags only", args)}
			}
			return nil
		},
		Version:       buildinfo.Read().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), cmd.Flags(), o, stderr, getenv)
		},
	}
	cmd.SetVersionTemplate(buildinfo.VersionTemplate)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.Flags().SortFlags = false // in the order above: connection, store, simulator, limits, logs
	cmd.Flags().AddFlagSet(fs)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagerr.Explain(err)} })
	return cmd
}

// run executes the worker's command line; --help and --version return nil.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cmd := newCommand(stdout, stderr, getenv)
	cmd.SetArgs(args)
	return cmd.ExecuteContext(ctx)
}

// serve runs the worker with the parsed options until ctx ends.
func serve(ctx context.Context, fs *pflag.FlagSet, o *options, stderr io.Writer, getenv func(string) string) error {
	conn, err := o.cluster.Config(o.address, o.namespace, getenv)
	if err != nil {
		return usageError{err}
	}
	storeDSN := store.DSN(o.store, getenv, defaultStore)
	if o.simOn && o.simURL != "" {
		return usageError{errors.New("give --sim or --sim-url, not both")}
	}
	allow, err := llm.ParseKeyEnvAllow(o.keyAllow)
	if err != nil {
		return usageError{fmt.Errorf("--api-key-env-allow: %w", err)}
	}
	zl, err := logging.New(o.logFormat, o.logLevel, stderr)
	if err != nil {
		return usageError{err}
	}
	defer func() { _ = zl.Sync() }()
	copts, err := conn.ClientOptions(logging.Temporal(zl))
	if err != nil {
		return usageError{err}
	}

	var observe activities.Observer // nil unless metrics are served
	if o.metricsAddr != "" {
		m := metrics.NewPrometheus(func(err error) { zl.Warn("metric not served", zap.Error(err)) })
		defer m.Close()
		stop, err := serveMetrics(o.metricsAddr, m.HTTP)
		switch {
		case err == nil:
			defer stop()
			copts.MetricsHandler = m.Handler
			observe = m.Calls
			zl.Info("serving metrics", zap.String("url", "http://"+o.metricsAddr+"/metrics"))
		case fs.Changed("metrics-addr"):
			return fmt.Errorf("serve metrics: %w", err)
		default:
			// Several workers on one machine: the first has the default port, the others run without.
			zl.Warn("not serving metrics: the default address is taken; give --metrics-addr", zap.Error(err))
		}
	}

	if o.simOn {
		url, stopSim, err := startSim(sim.Config{Forget: true, Latency: sim.Latency{Fixed: o.simLatency, Jitter: o.simJitter}})
		if err != nil {
			return err
		}
		defer stopSim()
		o.simURL = url
		zl.Info("simulator started", zap.String("url", url))
	} else if o.simURL == "" {
		zl.Warn("no simulator: runs whose models use provider sim will fail (no_simulator); start the worker with --sim or --sim-url")
	}

	st, err := store.Open(ctx, storeDSN)
	if err != nil {
		return fmt.Errorf("open results store: %w", err)
	}
	defer st.Close()
	c, err := client.DialContext(ctx, copts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", conn.Address, err)
	}
	defer c.Close()
	if err := workerhost.EnsureSearchAttributes(ctx, c, conn.Namespace); err != nil {
		// Runs work without them; starters then do not set them.
		zl.Warn("silico's search attributes are missing (runs work, but cannot be searched by experiment): " + err.Error())
	}
	w, err := workerhost.New(c, workerhost.Config{
		Store: st,
		// Specs name the variables their models' keys are read from; never this worker's own credentials.
		Getenv:              temporalclient.WithoutOwnVariables(getenv, store.EnvDSN),
		SimURL:              o.simURL,
		SimSettingsFixed:    true,
		OutputRoot:          o.output,
		OutputAnywhere:      o.outputAnywhere,
		KeyEnvAllow:         allow,
		MaxConcurrentPasses: o.passes,
		Observe:             observe,
	})
	if err != nil {
		return err
	}
	zl.Info("worker started", zap.String("address", conn.Address), zap.String("namespace", conn.Namespace),
		zap.String("auth", conn.Auth()), zap.String("task_queue", wire.TaskQueue), zap.String("store", st.Location()),
		zap.Strings("api_key_env_allow", allow), zap.String("output_root", o.output), zap.Bool("output_anywhere", o.outputAnywhere))
	// worker.Run stops on the channel closing; the context's end is that signal.
	if err := w.Run(ctxInterrupt(ctx)); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// serveMetrics serves h at http://addr/metrics until stop, which waits for the server to end.
func serveMetrics(addr string, h http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // ErrServerClosed after Shutdown
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
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

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
