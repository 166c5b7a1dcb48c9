package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workflows"
)

func newRunCmd() *cobra.Command {
	var (
		conn     connFlags
		output   string
		over     overrides
		dryRun   bool
		detach   bool
		fresh    bool
		retry    bool
		withRep  bool
		noCache  bool
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run SPEC|ID",
		Short: "Run an experiment (or attach to its run) and write its outputs",
		Long: `Run starts the ExperimentWorkflow of SPEC, or attaches to it when a run of the same spec exists (running:
it waits for it; completed: it exports its results again). --new starts a fresh run. Without --address the whole
system runs in this process; kill it at any moment and run the same command again to finish the run.

Given a run id (or a unique prefix of one; ` + "`starter runs`" + ` lists them) instead of SPEC, it resumes that run
with the spec saved in the results store, whatever flags started it: a cancelled, failed or interrupted run goes
on, calling only the cells without a record; a running one is attached to; a completed one is exported again.

--retry-failed starts a new execution of the finished run of SPEC (or of the run id given instead of SPEC) that
calls only the cells recorded as failed, then rewrites the outputs; the Web UI shows both executions.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := runOptions{detach: detach, report: withRep, every: interval}
			if !looksLikeRunID(args[0]) {
				opts.specRef = args[0]
			}
			if withRep && detach {
				return withCode(exitUsage, errors.New("--report waits for the run: drop --detach, or run `starter report` when it is done"))
			}
			if noCache && retry {
				return withCode(exitUsage, errors.New("--no-cache cannot change a finished run's spec: run --retry-failed without it, or start a fresh run with --new --no-cache"))
			}
			if looksLikeRunID(args[0]) {
				if dryRun || noCache || fresh || anyChanged(cmd, "model", "seeds", "on-error", "cumulative", "max-concurrency") {
					return withCode(exitUsage, fmt.Errorf("%s names a run, whose spec is saved: --dry-run, --no-cache, --new and "+
						"the spec overrides take a spec file", args[0]))
				}
				if detach && conn.embedded() {
					return withCode(exitUsage, errors.New("--detach needs a Temporal server (--address): in embedded mode the worker lives in this process"))
				}
				if retry {
					id, err := resolveStored(cmd.Context(), &conn, args[0])
					if err != nil {
						return err
					}
					return retryRun(cmd, &conn, id, nil, output, opts)
				}
				return resumeRun(cmd, &conn, args[0], output, opts)
			}
			largePhaseDone := collectOftenFor(args[0])
			defer largePhaseDone()
			spec, err := loadSpec(cmd.ErrOrStderr(), args[0])
			if err != nil {
				return withCode(exitUsage, err)
			}
			if err := over.apply(spec); err != nil {
				return err
			}
			if noCache {
				// Part of the spec, so part of the run id: a run without the cache is another run.
				spec.DisableCache()
			}
			if dryRun {
				return printDryRun(cmd.Context(), cmd.OutOrStdout(), spec, &conn.store)
			}
			if detach && conn.embedded() {
				return withCode(exitUsage, errors.New("--detach needs a Temporal server (--address): in embedded mode the worker lives in this process"))
			}
			var earlier []earlierForm
			if !fresh || retry {
				if earlier, err = earlierForms(spec); err != nil {
					return err
				}
			}
			// From here on the run's spec is its canonical copy, made once: its JSON is the run's hash, the
			// workflow input and the spec saved in the store, and the spec as loaded goes (a large spec is held
			// once, not twice).
			spec, canonical, err := canonicalSpec(spec)
			largePhaseDone()
			if err != nil {
				return err
			}
			id := workflowIDOf(spec.Name, experiment.HashOf(canonical))
			ctx := cmd.Context()
			if fresh && !retry {
				id += "-" + time.Now().UTC().Format("20060102T150405")
			} else if e, err := pickEarlier(ctx, &conn, id, earlier); err != nil {
				return err
			} else if e != nil {
				// An earlier release's run of this file: it goes on with the spec it was started with.
				earlierNote(cmd.ErrOrStderr(), &conn, e, args[0])
				spec, canonical, id = e.spec, e.canonical, e.id
			} else {
				opts.newFromFile = true
			}
			earlier = nil
			if retry {
				return retryRun(cmd, &conn, id, spec, output, opts)
			}
			sess, err := open(ctx, &conn, sessionOptions{worker: true, sim: spec.Simulator}, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer sess.Close()
			if output, err = outputDir(&conn, output, id); err != nil {
				return err
			}
			return runSpec(ctx, sess, spec, canonical, id, output, opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	conn.registerWorker(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output directory (default: "+experiment.DefaultOutputRoot+"/<run id>; with --address: a directory of the worker, under its --output-root and relative to it, default <output-root>/<run id>)")
	over.register(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would run (calls, tokens, cost, least wall time) and exit")
	cmd.Flags().BoolVar(&detach, "detach", false, "start the run and return (needs --address)")
	cmd.Flags().BoolVar(&fresh, "new", false, "start a fresh run even when one of this spec exists")
	cmd.Flags().BoolVar(&retry, "retry-failed", false, "call again only the failed cells of the finished run of SPEC (or of a run id)")
	cmd.Flags().BoolVar(&withRep, "report", false, "also write report.html next to the outputs when the run is done")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "neither read nor write the response cache (sets cache: off for the run and every model)")
	cmd.Flags().DurationVar(&interval, "progress-every", 5*time.Second, "interval of plain progress lines when not on a terminal")
	return cmd
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// workflowID derives the run's workflow id from the spec: the same spec always maps to the same run, so running
// the same command again attaches to it.
func workflowID(spec *experiment.Spec) string {
	return workflowIDOf(spec.Name, spec.Hash())
}

// workflowIDOf is the workflow id of a spec named name whose Hash is hash.
func workflowIDOf(name, hash string) string {
	slug := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(slug) > 40 {
		slug = strings.TrimRight(slug[:40], "-")
	}
	if slug == "" {
		slug = "experiment"
	}
	return "silico-" + slug + "-" + hash
}

// canonicalSpec returns the spec a run goes on with: spec's canonical copy (experiment.Spec.Canonical), validated
// so that its templates are compiled, and the copy's JSON. The caller drops spec for it.
func canonicalSpec(spec *experiment.Spec) (*experiment.Spec, []byte, error) {
	c, canonical, err := spec.Canonical()
	if err != nil {
		return nil, nil, err
	}
	if err := c.Validate(); err != nil {
		// Cannot happen for a spec that loaded: its canonical copy holds the same values.
		return nil, nil, fmt.Errorf("the spec's canonical form: %w", err)
	}
	return c, canonical, nil
}

// retryRun starts a new execution of finished run id that calls only its failed cells. spec is the run's spec
// when the user named it; without it the spec saved in the results store is used.
func retryRun(cmd *cobra.Command, conn *connFlags, id string, spec *experiment.Spec, output string, o runOptions) error {
	ctx := cmd.Context()
	var sim *experiment.SimulatorSettings
	if spec != nil {
		sim = spec.Simulator
	}
	sess, err := open(ctx, conn, sessionOptions{worker: true, sim: sim}, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer sess.Close()
	if spec == nil && sess.store != nil {
		if b, err := sess.store.LoadRun(ctx, id); err == nil {
			if s, err := specfile.ParseSaved(b, id); err == nil {
				spec = s
			}
		}
	}
	d, err := sess.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("no run %s to retry (run it first): %w", id, err))
	}
	if st := d.GetWorkflowExecutionInfo().GetStatus(); st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return withCode(exitUsage, fmt.Errorf("run %s is still running: wait for it to finish (`%s`), then retry its failed cells",
			id, conn.command("status", id, "--watch")))
	}
	if output, err = outputDir(conn, output, id); err != nil {
		return err
	}
	opts := client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             sess.runQueue(id),
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:         "retry the failed cells of " + id,
	}
	// No spec in the input: the run's spec is the one its results store holds, so the cells are the same.
	run, err := sess.client.ExecuteWorkflow(ctx, opts, workflows.ExperimentWorkflow,
		wire.Input{RunID: id, Output: output, RetryFailed: true})
	if err != nil {
		return fmt.Errorf("start the retry of run %s: %w", id, err)
	}
	if err := sess.serveRun(ctx, id, run.GetRunID(), cmd.ErrOrStderr()); err != nil {
		return err
	}
	sess.recordState(id, store.RunRunning)
	fmt.Fprintf(cmd.OutOrStdout(), "Retrying the failed cells of run %s\n", id)
	if link := sess.uiLink(id); link != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "  Temporal UI: %s (both executions)\n", link)
	}
	return follow(ctx, sess, run, spec, id, output, false, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// runOptions are the flags of `starter run` that shape runSpec.
type runOptions struct {
	// specRef is the spec file the user named, "" when they named a run.
	specRef string
	// newFromFile says the spec file has no run of an earlier release: runSpec names the unfinished runs of the
	// same name when it starts a new one (sameNameNote).
	newFromFile bool
	detach      bool
	report      bool // write report.html next to the outputs when done
	every       time.Duration
}

// runSpec starts run id of spec, whose canonical JSON is canonical (see canonicalSpec), or attaches to it, and
// follows it.
func runSpec(ctx context.Context, sess *session, spec *experiment.Spec, canonical []byte, id, output string, o runOptions,
	stdout, stderr io.Writer) error {
	c := sess.client
	attached, ended, moved := false, false, false
	if d, err := c.DescribeWorkflowExecution(ctx, id, ""); err == nil {
		st := d.GetWorkflowExecutionInfo().GetStatus()
		attached = st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		ended = st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		if st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			if moved, err = sess.moveToOwnQueue(ctx, id, d, spec, stderr); err != nil {
				return err
			}
			attached = !moved // moved: its execution ended, and a new one starts below
		}
	}
	opts := client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: sess.runQueue(id),
		// Attach to a running run; restart a failed, cancelled or terminated one under the same id, which
		// resumes it from the results store; refuse to restart a completed one (it is exported again instead).
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		StaticSummary:            spec.Summary(),
	}
	hash := experiment.HashOf(canonical)
	opts.StaticDetails = fmt.Sprintf("spec %s · hash %s", spec.Name, hash)
	if sess.attrs {
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(wire.AttrExperiment).ValueSet(spec.Name),
			temporal.NewSearchAttributeKeyKeyword(wire.AttrSpecHash).ValueSet(hash),
		)
	}
	var in wire.Input
	var err error
	if attached {
		in = wire.Input{Spec: canonical, Output: output}
	} else {
		in, err = startInput(ctx, sess, id, spec, canonical, output)
	}
	if err != nil {
		return err
	}
	run, err := c.ExecuteWorkflow(ctx, opts, workflows.ExperimentWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &already):
		attached = true
		run = c.GetWorkflow(ctx, id, "")
	case err != nil:
		return fmt.Errorf("start workflow %s: %w", id, err)
	}
	if err := sess.serveRun(ctx, id, run.GetRunID(), stderr); err != nil {
		return err
	}
	verb := "Started"
	switch {
	case attached:
		verb = "Attached to"
	case moved:
		verb = "Resumed"
	}
	fmt.Fprintf(stdout, "%s run %s\n  %s\n", verb, id, spec.Summary())
	if !attached && !moved && o.newFromFile {
		sameNameNote(ctx, stderr, sess, id, spec, canonical)
	}
	if !attached || !ended {
		sess.recordState(id, store.RunRunning)
		if err := sess.unpause(ctx, id, stdout); err != nil {
			return err
		}
	}
	if attached && ended {
		if r, ok := newerUnfinished(ctx, sess, id); ok {
			fmt.Fprintf(stdout, "  note: this run had already ended, and it is not the newest of this spec: run %s (started %s) "+
				"has not finished; `%s` finishes it\n", r.ID, r.Created.Local().Format(time.DateTime), sess.flags.command("run", r.ID))
		}
	}
	if link := sess.uiLink(id); link != "" {
		fmt.Fprintf(stdout, "  Temporal UI: %s\n", link)
	}
	if o.detach {
		fmt.Fprintf(stdout, "  follow it with: %s\n", sess.flags.command("status", id, "--watch"))
		return nil
	}
	return follow(ctx, sess, run, spec, id, output, attached, o, stdout, stderr)
}

// looksLikeRunID reports whether arg of `starter run` names a run rather than a spec file: no regular file of
// that name exists (a directory named like a run, such as out/<id>, is not a spec) and it has neither a path separator nor a dot, which every spec file name has (.yaml, .json) and no run
// id has.
func looksLikeRunID(arg string) bool {
	if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() {
		return false
	}
	return !strings.ContainsAny(arg, "/.\\")
}

// resumeRun goes on with the run ref names (an id or a unique prefix), with the spec saved in the results store.
func resumeRun(cmd *cobra.Command, conn *connFlags, ref, output string, o runOptions) error {
	ctx := cmd.Context()
	if !conn.storeNamed() {
		return withCode(exitUsage, fmt.Errorf("%s is not a spec file; `starter run ID` reads the run's saved spec from the workers' "+
			"results store: with --address, name it with --store or %s, or give the spec file instead", ref, store.EnvDSN))
	}
	if dsn := conn.dsn(); !store.IsPostgres(dsn) {
		// Opening a SQLite path that does not exist would create an empty store.
		if _, err := os.Stat(dsn); err != nil {
			return withCode(exitUsage, fmt.Errorf("%s is neither a spec file nor a run of a results store: there is no store at %s "+
				"(set --store, SILICO_STORE or --state-dir)", ref, dsn))
		}
	}
	st, err := store.Open(ctx, conn.dsn())
	if err != nil {
		return fmt.Errorf("open results store: %w", err)
	}
	id, known, err := resolveRun(ctx, st, ref)
	var canonical []byte
	if err == nil && known {
		canonical, err = st.LoadRun(ctx, id)
	}
	_ = st.Close()
	switch {
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return err
	case !known || err != nil:
		return withCode(exitUsage, fmt.Errorf("%s is neither a spec file nor a run with a saved spec in %s; `%s` lists the runs",
			ref, conn.dsn(), conn.command("runs")))
	}
	spec, err := specfile.ParseSaved(canonical, id)
	if err != nil {
		return err
	}
	sess, err := open(ctx, conn, sessionOptions{worker: true, sim: spec.Simulator}, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer sess.Close()
	if output, err = outputDir(conn, output, id); err != nil {
		return err
	}
	return runSpec(ctx, sess, spec, canonical, id, output, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// outputDir is the directory a run's outputs go to: output when given, else DefaultOutputRoot/<id> in embedded mode, made
// absolute there (the worker is this process); with --address it is the worker's to resolve.
func outputDir(conn *connFlags, output, id string) (string, error) {
	if conn.embedded() && output == "" {
		output = filepath.Join(experiment.DefaultOutputRoot, id)
	}
	if output != "" && conn.embedded() {
		return filepath.Abs(output)
	}
	return output, nil
}

// follow shows a run's progress until it ends, re-exports an attached run where this command asks, and prints
// the summary. spec may be nil (a retry by run id without the store at hand).
func follow(ctx context.Context, sess *session, run client.WorkflowRun, spec *experiment.Spec, id, output string,
	attached bool, o runOptions, stdout, stderr io.Writer) error {
	// The run's size, for the progress shown before the workflow answers its first query; without the spec the
	// watch reads it from the spec saved in the store.
	var size runSize
	if spec != nil {
		size = runSize{cells: spec.NumCells(), passes: len(spec.Passes()), known: true}
	}
	pctx, stopProgress := context.WithCancel(ctx)
	progDone := make(chan struct{})
	go func() {
		defer close(progDone)
		watchProgress(pctx, sess.client, sess.store, id, size, o.every, stderr)
	}()
	var res wire.Result
	err := run.Get(ctx, &res)
	stopProgress()
	<-progDone
	resume := sess.resumeCommand(id, o.specRef)
	if err != nil {
		if ctx.Err() != nil {
			if sess.worker != nil {
				// Its own task queue is served by no other command: it stays stopped until its owner asks.
				sess.recordState(id, store.RunStopped)
				fmt.Fprintf(stderr, "\ninterrupted: letting the calls in flight land (Ctrl-C again to quit at once);"+
					" the run stays stopped, whatever else runs here, until `%s` resumes it, calling only the cells"+
					" without a record\n", resume)
			} else {
				fmt.Fprintf(stderr, "\ninterrupted: the run goes on on the workers; follow it with `%s`"+
					" or attach again with `%s`\n", sess.flags.command("status", id), resume)
			}
			return withCode(exitInterrupted, errors.New(""))
		}
		state := endState(err)
		if d, derr := describeRun(context.WithoutCancel(ctx), sess.client, id); derr == nil {
			state = stateWord(d.GetWorkflowExecutionInfo().GetStatus()) // the server's word, not the error chain's
		}
		sess.recordState(id, state)
		uiAfter(stderr, sess)
		if state == store.RunCancelled {
			return fmt.Errorf("run %s was cancelled (`starter cancel`, the Web UI or `temporal workflow cancel`); what it "+
				"recorded is kept: `%s` resumes it, calling only the cells without a record, and `%s` writes what it has",
				id, resume, sess.flags.command("export", id, "--output", "DIR"))
		}
		return fmt.Errorf("run %s %s: %w; what it recorded is kept: `%s` starts it again, calling only the cells without a record",
			id, state, err, resume)
	}
	sess.recordState(id, store.RunCompleted)
	// A completed run is exported again where this command asks, when its store is at hand.
	if attached && spec != nil && sess.store != nil && output != "" && output != res.OutputDir {
		sum, err := results.ExportFor(spec)(ctx, sess.store, spec, res.RunID, output, time.Duration(res.Summary.ElapsedSeconds*float64(time.Second)))
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		res.Summary, res.OutputDir = sum, output
	}
	printSummary(stdout, res)
	if o.report && spec != nil {
		if err := reportAfterRun(ctx, sess, spec, res.RunID, res.OutputDir,
			time.Duration(res.Summary.ElapsedSeconds*float64(time.Second)), stdout); err != nil {
			return err
		}
	}
	if res.Summary.Failed > 0 {
		nextSteps(ctx, stdout, sess, res.RunID, o.specRef, res.Summary.Cells, attached)
	}
	uiAfter(stdout, sess)
	if res.Summary.Failed > 0 {
		return withCode(exitCallsFailed, nil)
	}
	return nil
}

func printSummary(w io.Writer, res wire.Result) {
	s := res.Summary
	elapsed := (time.Duration(s.ElapsedSeconds * float64(time.Second))).Round(100 * time.Millisecond)
	if s.Kind == experiment.KindEmbed {
		fmt.Fprintf(w, "Done: %d vectors (models × texts) in %s: %d ok, %d failed\n", s.Cells, elapsed, s.OK, s.Failed)
	} else {
		fmt.Fprintf(w, "Done: %d cells in %s: %d ok, %d unparsed, %d failed\n", s.Cells, elapsed, s.OK, s.Unparsed, s.Failed)
	}
	fmt.Fprintf(w, "  tokens: %d prompt + %d completion · cost %s\n", s.PromptTokens, s.CompletionTokens, s.CostUSD.Display())
	if s.Cached > 0 {
		fmt.Fprintf(w, "  cache: %d cells answered from the response cache, no call made · %s saved\n", s.Cached, s.SavedUSD.Display())
	}
	if s.BatchSavedUSD > 0 {
		fmt.Fprintf(w, "  batch: provider batches at the batch price · %s saved against synchronous calls\n", s.BatchSavedUSD.Display())
	}
	if s.Length > 0 || s.ContentFiltered > 0 {
		fmt.Fprintf(w, "  finish: %d answers cut at max_tokens (finish_reason length) · %d withheld by the content filter\n", s.Length, s.ContentFiltered)
	}
	if res.Stopped != "" {
		fmt.Fprintf(w, "  stopped early: %s\n", res.Stopped)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "  error: %s\n", e)
	}
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	if s.Kind == experiment.KindEmbed {
		var sims []string
		for _, m := range s.Models {
			if len(s.Models) > 0 && s.Cells/len(s.Models) <= results.MaxSimilarityTexts {
				sims = append(sims, results.SimilarityFile(m.Model))
			}
		}
		fmt.Fprintf(w, "  outputs: %s\n", filepath.Join(res.OutputDir, "{"+strings.Join(append([]string{results.VectorsFile,
			results.VectorIndexFile}, append(sims, results.SummaryFile)...), ",")+"}"))
		return
	}
	outputs := s.Outputs
	if len(outputs) == 0 { // a summary written before the list was kept
		outputs = []string{"results.jsonl", "results.csv", "scales.csv", "reliability.csv", "items.csv", "agreement.csv", "summary.json"}
	}
	fmt.Fprintf(w, "  outputs: %s\n", filepath.Join(res.OutputDir, "{"+strings.Join(outputs, ",")+"}"))
}
