package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// Who continues a run. In the embedded default a run's workflow and activities are on its own task queue
// (wire.RunQueue), which only a starter naming the run polls (`starter run ID`, the same spec again, `starter
// resume ID`): a run stopped by Ctrl-C, kill -9 or a cancel waits there, untouched by any other command on the
// state dir. On a cluster every worker polls wire.TaskQueue and continues any run, unless its owner paused it
// (`starter pause ID`, wire.SignalPause).
//
// Releases before run queues put the embedded runs on wire.TaskQueue too, which every later starter served: a
// run they left unfinished is moved to its own queue when a starter that serves runs meets it (moveToOwnQueue).

// serveRun starts the session's worker for execution runID of run id, on the execution's task queue, while it
// runs. A run still on the shared wire.TaskQueue in the embedded default (an earlier release's, in batch mode:
// see moveToOwnQueue) is served there, and so is every other run on that queue, which this says.
func (s *session) serveRun(ctx context.Context, id, runID string, w io.Writer) error {
	if !s.serves {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	d, err := s.client.DescribeWorkflowExecution(dctx, id, runID)
	cancel()
	if err != nil {
		return fmt.Errorf("look up run %s: %w", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil // it has ended: nothing to serve
	}
	tq := info.GetTaskQueue()
	if tq == wire.TaskQueue {
		if others := s.sharedQueueRuns(ctx, id); len(others) > 0 {
			fmt.Fprintf(w, "note: run %s is on the task queue %s, which an earlier release gave every run of this folder; it has "+
				"provider batches that only its execution knows, so it stays there, and serving it continues %s too\n",
				id, wire.TaskQueue, strings.Join(others, ", "))
		}
	}
	return s.serve(tq)
}

// sharedQueueRuns are the runs of the results store, other than except, whose execution runs on wire.TaskQueue.
func (s *session) sharedQueueRuns(ctx context.Context, except string) []string {
	if s.store == nil {
		return nil
	}
	runs, err := s.store.Runs(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range runs {
		if r.ID == except || store.Terminal(r.State) {
			continue
		}
		if d, err := describeRun(ctx, s.client, r.ID); err == nil && onSharedQueue(d) {
			out = append(out, r.ID)
		}
	}
	return out
}

// onSharedQueue reports whether d describes an execution that runs on wire.TaskQueue.
func onSharedQueue(d *workflowservice.DescribeWorkflowExecutionResponse) bool {
	info := d.GetWorkflowExecutionInfo()
	return info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && info.GetTaskQueue() == wire.TaskQueue
}

// moveToOwnQueue moves run id, whose running execution d describes, off the shared wire.TaskQueue, where a
// release before run queues started it in the embedded default, and reports whether it did: it terminates that
// execution, so that a new one goes on with the run on wire.RunQueue(id), calling only the cells without a
// record. No worker serves the old execution meanwhile: this session holds the state dir, so no other starter
// runs, and its own worker has not started. spec is the run's spec. Nothing is moved outside the embedded
// default, on a session that serves no runs, or for a run with a model in batch mode: its provider batches are
// known to its execution alone, and a new one would submit them again.
func (s *session) moveToOwnQueue(ctx context.Context, id string, d *workflowservice.DescribeWorkflowExecutionResponse,
	spec *experiment.Spec, w io.Writer) (bool, error) {
	if !s.serves || !onSharedQueue(d) || slices.ContainsFunc(spec.Models, spec.Batched) {
		return false, nil
	}
	reason := fmt.Sprintf("moved to the run's own task queue %s: a run of the embedded default goes on only when its owner asks",
		wire.RunQueue(id))
	if err := s.client.TerminateWorkflow(ctx, id, d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), reason); err != nil {
		return false, fmt.Errorf("move run %s to its own task queue: %w", id, err)
	}
	fmt.Fprintf(w, "note: run %s was started by an earlier release on the task queue %s, which any starter of this folder "+
		"served; it goes on in a new execution on a queue of its own, which only its owner's commands serve (the Web UI "+
		"shows the earlier execution terminated)\n", id, wire.TaskQueue)
	return true, nil
}

// moveSharedRuns moves, for `starter dev` before its worker starts on wire.TaskQueue, every run that a starter
// of an earlier release left running on that queue (its state says a starter ran it: runs started through dev by
// other clients are dev's to serve) to a new execution on its own queue, which nothing serves until its owner
// asks. A run in batch mode cannot move (see moveToOwnQueue): dev serves it, and says so.
func (s *session) moveSharedRuns(ctx context.Context, w io.Writer) error {
	if s.store == nil {
		return nil
	}
	runs, err := s.store.Runs(ctx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.State != store.RunRunning && r.State != store.RunStopped {
			continue
		}
		d, err := describeRun(ctx, s.client, r.ID)
		if err != nil || !onSharedQueue(d) {
			continue
		}
		saved, err := s.store.LoadRun(ctx, r.ID)
		if err != nil {
			continue
		}
		spec, err := specfile.ParseSaved(saved, r.ID)
		if err != nil {
			return err
		}
		moved, err := s.moveToOwnQueue(ctx, r.ID, d, spec, w)
		if err != nil {
			return err
		}
		if !moved {
			fmt.Fprintf(w, "note: run %s, which `starter run` of an earlier release left unfinished, has provider batches "+
				"that only its execution knows: it stays on the task queue %s, and this worker continues it (`%s` stops it)\n",
				r.ID, wire.TaskQueue, s.flags.command("pause", r.ID))
			continue
		}
		output := startedOutput(ctx, s.client, r.ID, d.GetWorkflowExecutionInfo().GetExecution().GetRunId())
		in, err := byReference(ctx, s.store, nil, r.ID, spec, saved, output)
		if err != nil {
			return err
		}
		if _, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: r.ID, TaskQueue: wire.RunQueue(r.ID), StaticSummary: spec.Summary(),
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		}, wire.WorkflowType, in); err != nil {
			return fmt.Errorf("move run %s to its own task queue: %w", r.ID, err)
		}
		fmt.Fprintf(w, "  run %s waits there until `%s`\n", r.ID, s.flags.command("run", r.ID))
	}
	return nil
}

// startedOutput is the output directory execution runID of run id was started with, "" when its history does
// not say (the worker's default then applies).
func startedOutput(ctx context.Context, c client.Client, id, runID string) string {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return ""
	}
	ev, err := it.Next()
	if err != nil {
		return ""
	}
	payloads := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(payloads) == 0 {
		return ""
	}
	var in wire.Input
	if json.Unmarshal(payloads[0].GetData(), &in) != nil {
		return ""
	}
	return in.Output
}

// pauseWait bounds how long `starter pause` waits for the run to say it is paused.
const pauseWait = 10 * time.Second

// unpause resumes run id when its owner paused it (`starter pause`), as running it again asks, and says so. A
// run that does not answer (no worker serves it yet, a release before pauses) is left as it is.
func (s *session) unpause(ctx context.Context, id string, w io.Writer) error {
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	p, err := queryProgress(qctx, s.client, id)
	cancel()
	if err != nil || p.Paused == nil {
		return nil
	}
	if err := s.client.SignalWorkflow(ctx, id, "", wire.SignalPause, wire.Pause{Paused: false, By: pauser("run")}); err != nil {
		return fmt.Errorf("resume run %s: %w", id, err)
	}
	fmt.Fprintf(w, "  resumed: it was paused since %s%s\n", p.Paused.Since.Local().Format(timeWithZone), byWhom(p.Paused.By))
	return nil
}

// timeWithZone is how a command shows a moment: date, time and zone, unambiguous in any terminal.
const timeWithZone = "2006-01-02 15:04:05 MST"

// byWhom is " by who" when who is known.
func byWhom(who string) string {
	if who == "" {
		return ""
	}
	return " by " + who
}

// pauser names who sends a pause or resume, for the Web UI: the command and the host it runs on.
func pauser(verb string) string {
	host, err := os.Hostname()
	if err != nil {
		return "starter " + verb
	}
	return fmt.Sprintf("starter %s on %s", verb, host)
}

func newPauseCmd() *cobra.Command {
	var conn connFlags
	cmd := &cobra.Command{
		Use:   "pause ID",
		Short: "Pause a run: it starts no pass and submits no batch until resumed",
		Long: `Pause asks run ID (or the run whose id starts with ID) to start nothing new: no pass is launched and no
provider batch submitted until ` + "`starter resume ID`" + ` (or ` + "`starter run ID`" + `). What runs already goes on to its end:
the passes running finish their cells, and the provider batches submitted are waited for and collected. On a
cluster (--address) this is how a run's owner stops its workers from continuing it without cancelling it; in
the embedded default a stopped run is continued by nothing but its owner anyway. The Web UI, ` + "`starter status`" + `
and the progress line say since when and by whom a run is paused. Runs started by a release before pauses
ignore it (the command says so).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRun(cmd, &conn, args[0], func(ctx context.Context, sess *session, id string) error {
				return pauseRun(ctx, sess, id, cmd.OutOrStdout())
			})
		},
	}
	conn.registerSession(cmd.Flags())
	acceptUnused(cmd.Flags(), "pause")
	return cmd
}

// pauseRun pauses run id and waits up to pauseWait for it to say so.
func pauseRun(ctx context.Context, sess *session, id string, stdout io.Writer) error {
	d, err := describeRun(ctx, sess.client, id)
	if err != nil {
		return fmt.Errorf("look up run %s: %w", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	if st := info.GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		fmt.Fprintf(stdout, "run %s already ended: %s; nothing to pause\n", id, statusWord(st))
		return nil
	}
	if err := sess.client.SignalWorkflow(ctx, id, "", wire.SignalPause, wire.Pause{Paused: true, By: pauser("pause")}); err != nil {
		return fmt.Errorf("pause run %s: %w", id, err)
	}
	if !hasPollers(ctx, sess.client, info.GetTaskQueue()) {
		fmt.Fprintf(stdout, "paused run %s: no worker serves it now, and when one does it starts nothing new until `%s`\n",
			id, sess.flags.command("resume", id))
		return nil
	}
	deadline := time.Now().Add(pauseWait)
	for {
		p, err := queryProgress(ctx, sess.client, id)
		if err == nil && p.Paused != nil {
			fmt.Fprintf(stdout, "paused run %s: no pass starts and no batch is submitted until `%s`; %d %s running finish their cells\n",
				id, sess.flags.command("resume", id), p.PassesRunning, plural(p.PassesRunning, "pass", "passes"))
			return nil
		}
		if err == nil && time.Now().After(deadline) {
			return fmt.Errorf("run %s does not honour a pause: a release before pauses started it; `%s` stops it instead",
				id, sess.flags.command("cancel", id))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s did not say within %s whether it is paused (%v); the pause stays asked for", id, pauseWait, err)
		}
		select {
		case <-ctx.Done():
			return withCode(exitInterrupted, errors.New(""))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func newResumeCmd() *cobra.Command {
	var (
		conn     connFlags
		output   string
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Go on with a stopped or paused run",
		Long: `Resume goes on with run ID (or the run whose id starts with ID). In the embedded default it is ` + "`starter run ID`" + `:
this process serves the run, lifting its pause if it has one, and follows it to its end. With --address it
lifts the run's pause (` + "`starter pause`" + `) and returns: the cluster's workers go on with it; ` + "`starter status ID --watch`" + `
follows it.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if conn.embedded() {
				return resumeRun(cmd, &conn, args[0], output, runOptions{every: interval})
			}
			return withRun(cmd, &conn, args[0], func(ctx context.Context, sess *session, id string) error {
				if err := sess.client.SignalWorkflow(ctx, id, "", wire.SignalPause, wire.Pause{Paused: false, By: pauser("resume")}); err != nil {
					return fmt.Errorf("resume run %s: %w", id, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "resumed run %s: the workers go on with it; `%s` follows it\n", id,
					sess.flags.command("status", id, "--watch"))
				return nil
			})
		},
	}
	conn.registerWorker(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output directory (default: "+experiment.DefaultOutputRoot+"/<run id>)")
	cmd.Flags().DurationVar(&interval, "progress-every", 5*time.Second, "interval of plain progress lines when not on a terminal")
	return cmd
}
