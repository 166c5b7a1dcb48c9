package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

func newValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate SPEC...",
		Short: "Check specs without running anything",
		Long: `Validate loads each spec and prints "OK path: name · M models × S seeds × I items × P personas = N calls",
every factor the grid multiplies named (prompts, wordings, answer modes and option orders where there are more
than one; "OK path: name · embed M models × T texts = N vectors" for a kind: embed spec), or every mistake with
file, line and field. Exit code 2 when any spec is invalid. --json prints the resolved spec
as JSON instead: the input a raw Temporal client can start ExperimentWorkflow with.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			bad := 0
			for _, path := range args {
				largePhaseDone := collectOftenFor(path)
				spec, err := loadSpec(cmd.ErrOrStderr(), path)
				if err != nil {
					largePhaseDone()
					bad++
					fmt.Fprintf(cmd.ErrOrStderr(), "%v\n", err)
					continue
				}
				notes := startNotes(spec, os.Getenv) // encodes the spec to size its workflow input
				largePhaseDone()
				for _, note := range notes {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %s\n", path, note)
				}
				if asJSON {
					enc := json.NewEncoder(out)
					enc.SetIndent("", "  ")
					if err := enc.Encode(spec); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(out, "OK %s: %s\n", path, spec.Summary())
				for _, line := range slices.Concat(batchModeLines(spec), answerModeLines(spec)) {
					fmt.Fprintln(out, "  "+line)
				}
			}
			if bad > 0 {
				return withCode(exitUsage, fmt.Errorf("%d of %d specs invalid", bad, len(args)))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the resolved spec as JSON")
	return cmd
}

// batchModeLines explain, for each model in batch mode, what that choice means for the run.
func batchModeLines(spec *experiment.Spec) []string {
	var out []string
	for _, m := range spec.Models {
		if !spec.Batched(m) {
			continue
		}
		set := spec.BatchSettings(m)
		price := "unpriced"
		if p, ok := llm.BatchPriceFor(m); ok {
			price = fmt.Sprintf("$%g in / $%g out per million tokens", p.InputPerMTok, p.OutputPerMTok)
		}
		out = append(out, fmt.Sprintf("model %s: batch mode: the provider's batch API at the batch price (%s), answered within 24 h, "+
			"batches of at most %d requests and %d bytes; cells a batch never runs: on_expired %s (starter estimate counts the batches)",
			m.ID, price, set.MaxRequests, set.MaxBytes, set.OnExpired))
	}
	return out
}

// answerModeLines say, for each model whose answer mode is not text, what its cells record.
func answerModeLines(spec *experiment.Spec) []string {
	var out []string
	for _, m := range spec.Models {
		a := spec.AnswerFor(m)
		switch {
		case a.Mode == experiment.AnswerText:
			continue
		case a.Mode == experiment.AnswerSamples:
			out = append(out, fmt.Sprintf("model %s: answer %s: distributions.csv has the share of the %d seeds that chose each option", m.ID, a, len(spec.Seeds)))
		case a.Mode == experiment.AnswerVerbalized:
			out = append(out, fmt.Sprintf("model %s: answer %s: each cell states a probability per option id (JSON through response_format), recorded normalised in the p_<option id> columns with their raw sum in probs_sum; the written answer is the most likely option", m.ID, a))
		case a.Logprobs:
			out = append(out, fmt.Sprintf("model %s: answer %s: each cell records its probability per option (p_<option id> columns) from the label token's logprobs", m.ID, a))
		default:
			out = append(out, fmt.Sprintf("model %s: answer %s: the answer is JSON naming one of the item's option ids", m.ID, a))
		}
	}
	return out
}

// startNotes are what would make a valid spec fail when a run starts, as far as this machine can tell: a spec too
// large for a workflow input, an api_key_env that workers refuse by default, or one that is not set here (the
// embedded mode's worker reads keys from this environment); and what the spec asks for that will not happen as
// written or is likely a mistake (experiment.Spec.Remarks: the seed of an anthropic model is not sent, a base_url
// without /v1, a json_schema reason under a small max_tokens).
func startNotes(spec *experiment.Spec, getenv func(string) string) []string {
	notes := spec.Remarks()
	if in, err := wire.NewInput(spec, "", ""); err == nil {
		if note := tooLargeNote(in); note != "" {
			notes = append(notes, note)
		}
	}
	allow, _ := llm.ParseKeyEnvAllow(llm.KeyEnvAllowSetting(getenv))
	for i, m := range spec.Models {
		switch {
		case m.APIKeyEnv == "":
		case !llm.KeyEnvAllowed(allow, m.APIKeyEnv):
			notes = append(notes, fmt.Sprintf("models[%d].api_key_env: workers read only variables matching %s unless started "+
				"with --api-key-env-allow (or %s) naming %s; without it every call of model %s fails",
				i, strings.Join(allow, ", "), llm.KeyEnvAllowVar, m.APIKeyEnv, m.ID))
		case getenv(m.APIKeyEnv) == "":
			notes = append(notes, fmt.Sprintf("models[%d].api_key_env: %s is not set here; a run in this process (no --address) "+
				"reads it here, a cluster's workers read their own", i, m.APIKeyEnv))
		}
	}
	return notes
}

func newExportCmd() *cobra.Command {
	var (
		conn   connFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "export ID --output DIR",
		Short: "Write a run's outputs from the results store",
		Long: `Export reads the run's results from the results store (--store or SILICO_STORE: a SQLite file, default
.silico/results.db, or a postgres:// URL) and writes results.jsonl, results.csv, scales.csv, reliability.csv,
items.csv, agreement.csv, distributions.csv (reference.csv and reference_scales.csv when the spec has a human
reference; order_bias.csv when some item's option order is not as written; variance.csv when items have scales;
modes.csv when a model answers in several modes) and summary.json to DIR. It needs no Temporal server; a run still in progress exports
what has finished, the rest marked NotRun.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return withCode(exitUsage, errors.New("--output DIR is required"))
			}
			ctx := cmd.Context()
			if dsn := conn.dsn(); !store.IsPostgres(dsn) {
				// Opening a SQLite path that does not exist would create an empty store.
				if _, err := os.Stat(dsn); err != nil {
					return fmt.Errorf("no results store at %s (set --store, SILICO_STORE or --state-dir): %w", dsn, err)
				}
			}
			s := &session{flags: &conn}
			if err := s.openStore(ctx); err != nil {
				return err
			}
			defer s.store.Close()
			id, err := s.resolve(ctx, args[0])
			if err != nil {
				return err
			}
			spec, err := loadRunSpec(ctx, s.store, id)
			if err != nil {
				return err
			}
			elapsed, err := s.store.Elapsed(ctx, id, time.Now())
			if err != nil {
				return err
			}
			sum, err := results.ExportFor(spec)(ctx, s.store, spec, id, output, elapsed)
			if err != nil {
				return err
			}
			printSummary(cmd.OutOrStdout(), wire.Result{RunID: id, OutputDir: output, Summary: sum})
			return nil
		},
	}
	conn.store.buildFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output directory")
	acceptUnused(cmd.Flags(), "export")
	return cmd
}

func newDevCmd() *cobra.Command {
	var (
		conn     connFlags
		simS     experiment.SimulatorSettings
		noWorker bool
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Keep an embedded server, Web UI, worker and simulator up until Ctrl-C",
		Long: `Dev runs the embedded Temporal server (state in --state-dir), its Web UI, a worker and the model simulator
until interrupted, so runs can be started with the temporal CLI or any client and browsed in the UI.
--no-worker serves the server and UI alone, for workers started elsewhere (` + "`worker --address`" + `).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !conn.embedded() {
				return withCode(exitUsage, errors.New("dev runs its own server: drop --address"))
			}
			ctx := cmd.Context()
			sess, err := open(ctx, &conn, sessionOptions{worker: !noWorker, sim: &simS, sharedSim: true}, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer sess.Close()
			out := cmd.OutOrStdout()
			if !noWorker {
				// dev's worker serves the shared queue, as a cluster's do: a run that an earlier release's `starter
				// run` left there goes to its own queue first, where only its owner continues it.
				if err := sess.moveSharedRuns(ctx, cmd.ErrOrStderr()); err != nil {
					return err
				}
				if err := sess.serve(wire.TaskQueue); err != nil {
					return err
				}
			}
			abs, _ := filepath.Abs(conn.store.stateDir)
			fmt.Fprintf(out, "Temporal server  %s (namespace %s, state in %s)\n", sess.dev.FrontendHostPort(), conn.client.namespace, abs)
			if u := sess.dev.UIURL(); u != "" {
				fmt.Fprintf(out, "Web UI           %s\n", u)
			}
			if noWorker {
				fmt.Fprintf(out, "Workers          none here: start them with `worker --address %s`\n", sess.dev.FrontendHostPort())
			} else {
				fmt.Fprintf(out, "Simulator        %s (settings from the --sim-* flags; a spec's simulator block does not apply here)\n", sess.simURL)
			}
			fmt.Fprintf(out, "Task queue       %s\n\n", wire.TaskQueue)
			fmt.Fprintf(out, "Start a run:\n  starter validate --json SPEC > spec.json\n")
			fmt.Fprintf(out, "  temporal workflow start --address %s --task-queue %s --type ExperimentWorkflow \\\n"+
				"    --workflow-id my-run --input-file spec.json\n", sess.dev.FrontendHostPort(), wire.TaskQueue)
			fmt.Fprintf(out, "Outputs land in %s/<workflow id>/. Ctrl-C stops everything; state is kept.\n", experiment.DefaultOutputRoot)
			fmt.Fprintf(out, "Runs of `starter run` are on queues of their own: this worker does not continue them (`starter run ID` does).\n")
			<-ctx.Done()
			fmt.Fprintln(cmd.ErrOrStderr(), "stopping")
			return nil
		},
	}
	conn.registerWorker(cmd.Flags())
	cmd.Flags().BoolVar(&noWorker, "no-worker", false, "serve the Temporal server and UI only: no worker, no simulator")
	// Runs started through dev share one simulator, so its settings are flags here, not a spec's simulator block.
	cmd.Flags().Var((*durationFlag)(&simS.Latency), "sim-latency", "simulator: latency of every call (e.g. 300ms)")
	cmd.Flags().Var((*durationFlag)(&simS.Jitter), "sim-jitter", "simulator: uniform jitter around the latency")
	cmd.Flags().IntVar(&simS.RPM, "sim-rpm", 0, "simulator: requests per minute it enforces (0: unlimited)")
	cmd.Flags().IntVar(&simS.TPM, "sim-tpm", 0, "simulator: tokens per minute it enforces (0: unlimited)")
	cmd.Flags().Var((*durationFlag)(&simS.BatchTime), "sim-batch-time", "simulator: how long a provider batch takes to run (0: at once)")
	cmd.Flags().IntVar(&simS.BatchEnqueuedTokens, "sim-batch-enqueued-tokens", 0, "simulator: the enqueued-token limit per model of its batch API (0: no limit)")
	cmd.Flags().Lookup("sim-addr").DefValue = "127.0.0.1:8088"
	_ = cmd.Flags().Set("sim-addr", "127.0.0.1:8088")
	return cmd
}

// durationFlag lets an experiment.Duration be a flag.
type durationFlag experiment.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }
func (d *durationFlag) Type() string   { return "duration" }
func (d *durationFlag) Set(v string) error {
	x, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	*d = durationFlag(x)
	return nil
}
