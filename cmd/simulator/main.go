// Command simulator serves silico's OpenAI-compatible model simulator (package sim) over HTTP: chat completions,
// embeddings and the model list, with latency, RPM/TPM limits and injected faults. It listens on 127.0.0.1 unless
// told otherwise and prints its base URL; point an OpenAI client (or a spec's endpoint) at URL/v1.
//
//	simulator --addr 127.0.0.1:0 --latency 50ms --jitter 20ms --rpm 600 --fault-429 0.02
//	simulator --fault-429 0 --fail-cell gpt/1/q7/p3 --request-log requests.jsonl
//	simulator --outage-after 10s --outage-for 90s --outage-kind html    # nginx 502 pages for 90s, 10s in
//	simulator --outage-after 10s --outage-for 90s --outage-kind refuse  # the port closed for 90s
//
// An outage (package sim's Outage) is counted from the first model call; during it every chat and embeddings call
// fails the same way: --outage-kind status answers --outage-status (503 by default; 429 comes without Retry-After)
// with a JSON error, html answers an nginx error page (502 by default), refuse closes the listening port so that
// clients get ECONNREFUSED, and listens again on the same port at the end.
//
// With --config, the file's settings replace the flag defaults and flags given explicitly override the file.
// Ctrl-C (or SIGTERM) stops it gracefully: calls in flight get --grace (5s) to finish.
//
// Exit codes: 0 after a clean stop, 1 error, 2 invalid usage or config.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/silicolab/silico/buildinfo"
	"github.com/silicolab/silico/cmd/internal/flagerr"
	"github.com/silicolab/silico/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(os.Stderr, "Run 'simulator --help' for the flags.")
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError marks invalid flags or config (exit code 2).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// run parses args, serves the simulator until ctx is done, then shuts it down. It writes the base URL as the
// first line of stdout and a summary of the counters to stderr at the end. --help and --version print to stdout
// and return nil.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := &cobra.Command{
		Use:   "simulator [flags]",
		Short: "Serve silico's OpenAI-compatible model simulator over HTTP",
		Long: `Simulator serves silico's OpenAI-compatible model simulator: chat completions, embeddings and the model
list, with latency, RPM/TPM limits, injected faults and outages. It prints its base URL on the first line of
stdout. With --config, the file's settings replace the flag defaults and flags given explicitly override the file.
Exit codes: 0 after a clean stop, 1 error, 2 invalid usage or config.`,
		Example: `  simulator --addr 127.0.0.1:0 --latency 50ms --jitter 20ms --rpm 600 --fault-429 0.02
  simulator --outage-after 10s --outage-for 90s --outage-kind html`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unexpected arguments %q: the simulator takes flags only", args)}
			}
			return nil
		},
		Version:       buildinfo.Read().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetVersionTemplate(buildinfo.VersionTemplate)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagerr.Explain(err)} })
	cmd.SetArgs(args)
	fs := cmd.Flags()
	fs.SortFlags = false
	serve := defineFlags(fs, stdout, stderr)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context()) }
	return cmd.ExecuteContext(ctx)
}

// defineFlags defines the simulator's flags on fs and returns the function that, once they are parsed, serves
// the simulator they describe until ctx is done.
func defineFlags(fs *pflag.FlagSet, stdout, stderr io.Writer) func(ctx context.Context) error {
	addr := fs.String("addr", "127.0.0.1:8088", "listen address host:port (port 0 picks a free port)")
	configPath := fs.String("config", "", "YAML or JSON config file (see sim.LoadConfig); explicit flags override it")
	requestLog := fs.String("request-log", "", "append one JSON line per request to this file")
	latency := fs.Duration("latency", 300*time.Millisecond, "fixed latency of each model call")
	jitter := fs.Duration("jitter", 200*time.Millisecond, "uniform ± jitter added to the latency")
	rpm := fs.Int("rpm", 0, "requests per minute per model (0 = unlimited)")
	tpm := fs.Int("tpm", 0, "tokens per minute per model (0 = unlimited)")
	burst := fs.Float64("burst", sim.DefaultBurst, "bucket capacity as a fraction of one minute's limit")
	f429 := fs.Float64("fault-429", 0, "rate of injected 429 rate_limit_exceeded (faults are opt-in: every rate defaults to 0)")
	fQuota := fs.Float64("fault-quota", 0, "rate of injected 429 insufficient_quota")
	f500 := fs.Float64("fault-500", 0, "rate of injected 500")
	f503 := fs.Float64("fault-503", 0, "rate of injected 503")
	fHang := fs.Float64("fault-hang", 0, "rate of calls that hang for --hang-for, then lose their connection")
	fDrop := fs.Float64("fault-drop", 0, "rate of calls whose connection is closed without a response")
	fMalformed := fs.Float64("fault-malformed", 0, "rate of 200 responses with a truncated body")
	fLength := fs.Float64("fault-length", 0, "rate of chat answers cut after their first token, finish_reason length")
	fFilter := fs.Float64("fault-content-filter", 0, "rate of chat answers withheld: content null, finish_reason content_filter")
	failCells := fs.StringArray("fail-cell", nil, "answer every request of this cell (its X-Silico-Cell header, sent by models of provider sim) with 500; repeatable")
	faultSeed := fs.Int64("fault-seed", 0, "seed of the fault sequence")
	hangFor := fs.Duration("hang-for", sim.DefaultHangFor, "how long a hanging call lasts")
	retry429 := fs.Duration("fault-429-retry-after", sim.DefaultRateLimitRetryAfter, "Retry-After of the injected 429s (whole seconds)")
	batchTime := fs.Duration("batch-time", 0, "how long a batch of the batch APIs takes to run, its requests completing evenly over it (0: at once)")
	batchTokens := fs.Int("batch-enqueued-tokens", 0, "the enqueued-token limit per model of the OpenAI batch API: a batch whose input tokens and those of the model's batches in progress exceed it fails with token_limit_exceeded (0: no limit)")
	rejectLines := fs.StringArray("batch-reject-line", nil, "fail every OpenAI batch holding this custom_id (a cell id) at validation, naming its line; repeatable")
	dropMetadata := fs.Bool("batch-drop-metadata", false, "keep no metadata of a created batch, as some OpenAI-format gateways do")
	outageAfter := fs.Duration("outage-after", 0, "start the outage this long after the first model call")
	outageFor := fs.Duration("outage-for", 0, "length of the outage (0 = no outage)")
	outageKind := fs.String("outage-kind", string(sim.OutageStatus), "how calls fail during the outage: status, html or refuse")
	outageStatus := fs.Int("outage-status", 0, "HTTP status of the outage (status: 429, 500, 502, 503 (default) or 504; html: 500, 502 (default), 503 or 504)")
	servedModel := fs.String("served-model", "", "the model every answer says answered it (default: the name asked for + "+sim.DefaultServedModelSuffix+")")
	fingerprint := fs.String("system-fingerprint", "", "the system_fingerprint of every OpenAI-shaped answer (default "+sim.DefaultSystemFingerprint+")")
	snapshotFrom := fs.Int64("snapshot-from-seed", 0, "answer the calls of this seed and above with a second snapshot (--snapshot-served-model, --snapshot-fingerprint)")
	snapshotModel := fs.String("snapshot-served-model", "", "the second snapshot's served model (default: the name asked for + "+sim.DefaultChangedSuffix+")")
	snapshotFP := fs.String("snapshot-fingerprint", "", "the second snapshot's system_fingerprint (default "+sim.DefaultChangedFingerprint+")")
	grace := fs.Duration("grace", 5*time.Second, "how long calls in flight may take to finish after a stop signal")
	models := fs.String("models", strings.Join(sim.DefaultModels(), ","), "comma-separated names listed by /v1/models")
	return func(ctx context.Context) error {
		cfg := sim.Config{Forget: true} // a standalone simulator serves any number of calls: its log is --request-log
		given := map[string]bool{}
		fs.Visit(func(f *pflag.Flag) { given[f.Name] = true })
		set := map[string]bool{}
		if *configPath != "" {
			c, err := sim.LoadConfig(*configPath)
			if err != nil {
				return usageError{err}
			}
			cfg = c
			cfg.Forget = true
			fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
		} else {
			fs.VisitAll(func(f *pflag.Flag) { set[f.Name] = true })
		}
		apply := func(name string, fn func()) {
			if set[name] {
				fn()
			}
		}
		apply("latency", func() { cfg.Latency.Fixed = *latency })
		apply("jitter", func() { cfg.Latency.Jitter = *jitter })
		apply("rpm", func() { cfg.RPM = *rpm })
		apply("tpm", func() { cfg.TPM = *tpm })
		apply("burst", func() { cfg.Burst = *burst })
		apply("fault-429", func() { cfg.Faults.RateLimit = *f429 })
		apply("fault-quota", func() { cfg.Faults.Quota = *fQuota })
		apply("fault-500", func() { cfg.Faults.ServerError500 = *f500 })
		apply("fault-503", func() { cfg.Faults.ServerError503 = *f503 })
		apply("fault-hang", func() { cfg.Faults.Hang = *fHang })
		apply("fault-drop", func() { cfg.Faults.Drop = *fDrop })
		apply("fault-malformed", func() { cfg.Faults.Malformed = *fMalformed })
		apply("fault-length", func() { cfg.Faults.Length = *fLength })
		apply("fault-content-filter", func() { cfg.Faults.ContentFilter = *fFilter })
		apply("fail-cell", func() { cfg.FailCells = *failCells })
		apply("fault-seed", func() { cfg.FaultSeed = *faultSeed })
		apply("hang-for", func() { cfg.HangFor = *hangFor })
		apply("fault-429-retry-after", func() { cfg.RateLimitRetryAfter = *retry429 })
		apply("batch-time", func() { cfg.Batch.ProcessingTime = *batchTime })
		apply("batch-enqueued-tokens", func() { cfg.Batch.EnqueuedTokens = *batchTokens })
		apply("batch-reject-line", func() { cfg.Batch.RejectLines = *rejectLines })
		apply("batch-drop-metadata", func() { cfg.Batch.DropMetadata = *dropMetadata })
		apply("models", func() { cfg.Models = splitList(*models) })
		apply("served-model", func() { cfg.ServedModel = *servedModel })
		apply("system-fingerprint", func() { cfg.SystemFingerprint = *fingerprint })
		// The snapshot flags describe one change together; any of them given replaces the config file's.
		if given["snapshot-from-seed"] || given["snapshot-served-model"] || given["snapshot-fingerprint"] {
			cfg.SnapshotChange = &sim.SnapshotChange{FromSeed: *snapshotFrom, ServedModel: *snapshotModel, SystemFingerprint: *snapshotFP}
		}
		// The outage flags describe one outage together; any of them given replaces the config file's outages.
		if given["outage-after"] || given["outage-for"] || given["outage-kind"] || given["outage-status"] {
			if *outageFor <= 0 {
				return usageError{fmt.Errorf("--outage-for %v: an outage needs a positive length, e.g. --outage-for 90s", *outageFor)}
			}
			cfg.Outages = []sim.Outage{{After: *outageAfter, For: *outageFor, Kind: sim.OutageKind(*outageKind), Status: *outageStatus}}
		}

		if *requestLog != "" {
			f, err := os.OpenFile(*requestLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				return fmt.Errorf("open request log: %w", err)
			}
			defer f.Close()
			cfg.RequestLog = f
		}
		s, err := sim.New(cfg)
		if err != nil {
			return usageError{err}
		}

		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", *addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", *addr, err)
		}
		sv, err := sim.Serve(s, ln) // the simulator owns its listener, so refuse outages apply
		if err != nil {
			_ = ln.Close()
			return err
		}
		fmt.Fprintf(stdout, "http://%s\n", sv.Addr())
		fmt.Fprintf(stderr, "simulator: OpenAI base URL %s (latency %v ± %v, rpm %d, tpm %d); Ctrl-C to stop\n",
			sv.URL(), cfg.Latency.Fixed, cfg.Latency.Jitter, cfg.RPM, cfg.TPM)
		for _, o := range cfg.Outages {
			fmt.Fprintf(stderr, "simulator: outage: %v\n", o)
		}

		select {
		case <-sv.Failed(): // the listener failed, or the port could not be listened on again after an outage
			_ = sv.Close()
			return fmt.Errorf("serve: %w", sv.Err())
		case <-ctx.Done():
		}
		shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *grace)
		defer cancel()
		// Calls still in flight after the grace (hangs, long latencies) lose their connections; their handlers see it
		// and return.
		shutErr := sv.Shutdown(shutCtx)
		if err := sv.Err(); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		c := s.Counters()
		fmt.Fprintf(stderr, "simulator: %d requests: %d ok (%d cut by length, %d content filtered), %d rate limited, "+
			"%d quota, %d server errors, %d hangs, %d drops, %d malformed, %d in outages; %d prompt + %d completion tokens\n",
			c.Requests, c.OK, c.Length, c.ContentFilter, c.RateLimited, c.Quota, c.ServerErrors, c.Hangs, c.Drops,
			c.Malformed, c.Outage, c.PromptTokens, c.CompletionTokens)
		if err := s.RequestLogErr(); err != nil {
			return err
		}
		if shutErr != nil && !errors.Is(shutErr, context.DeadlineExceeded) {
			return fmt.Errorf("shut down: %w", shutErr)
		}
		return nil
	}
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
