package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

func newCancelCmd() *cobra.Command {
	var (
		conn connFlags
		o    cancelOptions
	)
	cmd := &cobra.Command{
		Use: "cancel ID",
		Example: `  starter runs --status running
  starter cancel silico-ipip-50-quickstart-6f4f   # a unique prefix of the id will do`,
		Short: "Cancel a run and wait for it to end",
		Long: `Cancel asks the Temporal server to cancel run ID (the workflow id ` + "`starter run`" + ` printed). The server
is the one the connection flags name, as for ` + "`starter status`" + `: --address (TEMPORAL_ADDRESS), --namespace, the
TLS and API key flags; without --address, the embedded server of the starter running on --state-dir (or that
state dir's server, started for this command, when none runs). It then waits up to --wait for the run to end,
printing where it stands every --progress-every, and prints how it ended:

  cancelled: 1,204 of 6,000 cells recorded, 2 provider batches cancelled

The run stops sending calls within seconds (a pass learns of the cancellation from its next heartbeat); the
calls in flight then land and are recorded, so nothing paid for is lost, and the count waits for them. Each
provider batch in flight is cancelled at the provider, and what it completed is recorded before the run
ends (providers end a cancelled batch within minutes). The count is exact when the results store is at hand
(always without --address; with --address when --store or SILICO_STORE names the workers' store), otherwise a
lower bound from the run's last progress ("at least"). Nothing recorded is discarded: ` + "`starter export ID`" + `
writes it, and ` + "`starter run ID`" + ` starts the run again under the same id, calling only the cells without a
record. ID may be a unique prefix of the run's id (` + "`starter runs`" + ` lists them). The command returns as soon
as the run has ended, also when the starter that ran it exits with it.

--wait 0 returns once the cancellation is requested. When no worker polls the run's task queue, the command says
so and returns: the cancellation is carried out when a worker next runs.

Exit codes: 0 when the run ended (cancelled, or completed or failed before the cancellation took effect: the
output says which), when it had already ended before this command (the output says how and when; nothing is
cancelled), and when the command does not wait (--wait 0, or no worker); 1 when there is no run ID, the server
cannot be reached, the run has not ended within --wait, or the starter that ran it exited (was killed) before it
ended (its cancellation stays requested in both cases); 130 when
interrupted while waiting (the cancellation stays requested).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.wait < 0 || o.every <= 0 {
				return withCode(exitUsage, errors.New("--wait must be ≥ 0 and --progress-every > 0"))
			}
			return withRun(cmd, &conn, args[0], func(ctx context.Context, sess *session, id string) error {
				return cancelRun(ctx, sess, id, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	conn.registerSession(cmd.Flags())
	cmd.Flags().DurationVar(&o.wait, "wait", 10*time.Minute, "how long to wait for the run to end (0: return once the cancellation is requested)")
	cmd.Flags().DurationVar(&o.every, "progress-every", 5*time.Second, "interval of the progress lines while waiting")
	acceptUnused(cmd.Flags(), "cancel")
	return cmd
}

// cancelOptions are the flags of `starter cancel`.
type cancelOptions struct {
	// wait bounds the wait for the run to end; 0 does not wait.
	wait time.Duration
	// every is the interval of the progress lines while waiting.
	every time.Duration
}

// Intervals of cancelRun: how often it asks whether the run has ended, and for how long the recorded count must
// stay the same after the run ended before it is printed (the calls in flight land after the workflow ends).
const (
	cancelPoll   = time.Second
	cancelSettle = 5 * time.Second
	// rpcTimeout bounds each call to the server while waiting.
	rpcTimeout = 5 * time.Second
)

// cancelRun cancels run id on the session's server, waits up to o.wait for it to end and says how it ended.
func cancelRun(ctx context.Context, sess *session, id string, o cancelOptions, stdout, stderr io.Writer) error {
	c := sess.client
	where := fmt.Sprintf("%s namespace %s", sess.hostPort, sess.flags.client.namespace)
	d, err := describeRun(ctx, c, id)
	if _, missing := errors.AsType[*serviceerror.NotFound](err); missing {
		return sess.noSuchRun(ctx, id, where)
	}
	if err != nil {
		return fmt.Errorf("look up run %s on %s: %w", id, where, err)
	}
	info := d.GetWorkflowExecutionInfo()
	if st := info.GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		sess.recordState(id, stateWord(st))
		printEnded(stdout, id, d)
		return nil
	}
	last, _ := readProgress(ctx, c, sess.store, id)
	if err := c.CancelWorkflow(ctx, id, ""); err != nil {
		if _, ended := errors.AsType[*serviceerror.NotFound](err); ended {
			// It ended between the look-up and the request.
			if d, err := describeRun(ctx, c, id); err == nil {
				printEnded(stdout, id, d)
				return nil
			}
		}
		return fmt.Errorf("cancel run %s on %s: %w", id, where, err)
	}
	fmt.Fprintf(stdout, "cancellation of run %s requested on %s\n", id, where)
	if o.wait == 0 {
		fmt.Fprintf(stdout, "  not waiting (--wait 0): `%s` says when it has ended\n", sess.flags.command("status", id))
		return nil
	}
	if tq := info.GetTaskQueue(); !hasPollers(ctx, c, tq) {
		fmt.Fprintf(stdout, "  no worker polls task queue %s: the run ends when one does (`%s`, or a `worker` of the "+
			"cluster); until then none of its calls is made\n", tq, sess.resumeCommand(id, ""))
		return nil
	}

	wctx, cancel := context.WithTimeout(ctx, o.wait)
	defer cancel()
	tick := time.NewTicker(cancelPoll)
	defer tick.Stop()
	lastLine := time.Now()
	for {
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				fmt.Fprintf(stderr, "interrupted: the cancellation of run %s stays requested; `%s` follows it\n", id, sess.flags.command("status", id))
				return withCode(exitInterrupted, errors.New(""))
			}
			return fmt.Errorf("run %s has not ended within %s (--wait): its cancellation stays requested; "+
				"`%s` follows it", id, o.wait, sess.flags.command("status", id))
		case <-tick.C:
		}
		d, err := describeRun(wctx, c, id)
		if err != nil {
			if sess.ownerGone() {
				// The starter whose server this is has exited, its server with it: it ends when its run ends
				// (and says how in the store), or it was killed.
				return ownerExited(wctx, sess, id, last, stdout)
			}
			continue // the server may be restarting: ask again, until the deadline
		}
		if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return reportEnd(wctx, sess, id, st, last, stdout)
		}
		if s, err := readProgress(wctx, c, sess.store, id); err == nil {
			last = s
		}
		if time.Since(lastLine) >= o.every {
			lastLine = time.Now()
			fmt.Fprintf(stderr, "cancelling run %s: %s of %s cells recorded\n", id, thousands(last.done), thousands(last.total))
			for _, b := range last.batchLines(true) {
				fmt.Fprintf(stderr, "  %s\n", b)
			}
		}
	}
}

// printEnded says how and when the run d describes ended, before any cancellation of this command.
func printEnded(w io.Writer, id string, d *workflowservice.DescribeWorkflowExecutionResponse) {
	info := d.GetWorkflowExecutionInfo()
	fmt.Fprintf(w, "run %s already ended: %s at %s; nothing to cancel\n", id, statusWord(info.GetStatus()),
		info.GetCloseTime().AsTime().Local().Format(time.DateTime))
}

// ownerExited says how run id ended when the starter that served it has exited while this command waited: the
// state it recorded in the results store, or, when it recorded none (it was killed), that the run stopped with it.
func ownerExited(ctx context.Context, sess *session, id string, last snapshot, stdout io.Writer) error {
	state := ""
	if sess.store != nil {
		if runs, err := sess.store.Runs(ctx); err == nil {
			for _, r := range runs {
				if r.ID == id {
					state = r.State
				}
			}
		}
	}
	switch state {
	case store.RunCancelled:
		return reportEnd(ctx, sess, id, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, last, stdout)
	case store.RunCompleted:
		fmt.Fprintf(stdout, "run %s completed before the cancellation took effect\n", id)
		return nil
	case store.RunFailed, store.RunTerminated, store.RunTimedOut:
		fmt.Fprintf(stdout, "run %s ended %s before the cancellation took effect\n", id, state)
		return nil
	}
	recorded := last.done
	if sess.store != nil {
		if n, ok := settledCount(ctx, sess, id); ok {
			recorded = n
		}
	}
	fmt.Fprintf(stdout, "stopped: the starter that ran %s (pid %d) exited before the run ended; %s of %s cells recorded\n",
		id, sess.shared.PID, thousands(recorded), thousands(last.total))
	fmt.Fprintf(stdout, "  the cancellation stays requested: the run ends cancelled when it is next served (`%s`), and nothing "+
		"recorded is lost\n", sess.resumeCommand(id, ""))
	return withCode(exitError, fmt.Errorf("run %s has not ended: its starter exited first", id))
}

// noSuchRun is the error for a run id the server does not know, with where to look instead.
func (s *session) noSuchRun(ctx context.Context, id, where string) error {
	hint := ""
	if s.store != nil {
		if _, known, _ := resolveRun(ctx, s.store, id); known {
			hint = fmt.Sprintf("; the results store %s has it, but the server has no history of it (its retention ended, or "+
				"the server's state was removed)", s.store.Location())
		} else {
			hint = fmt.Sprintf("; `%s` lists the runs of %s", s.flags.command("runs"), s.store.Location())
		}
	}
	if s.flags.embedded() {
		if abs, err := filepath.Abs(s.flags.store.stateDir); err == nil {
			where += " (state dir " + abs + ")"
		}
	}
	return fmt.Errorf("no run named %s on %s%s", id, where, hint)
}

// reportEnd prints how run id ended once it is no longer running (its status st). last is its latest progress
// seen while it ran.
func reportEnd(ctx context.Context, sess *session, id string, st enumspb.WorkflowExecutionStatus, last snapshot, stdout io.Writer) error {
	c := sess.client
	sess.recordState(id, stateWord(st))
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		fmt.Fprintf(stdout, "run %s completed before the cancellation took effect\n", id)
		var res wire.Result
		if c.GetWorkflow(ctx, id, "").Get(ctx, &res) == nil {
			printSummary(stdout, res)
		}
		return nil
	default:
		fmt.Fprintf(stdout, "run %s ended %s before the cancellation took effect", id, statusWord(st))
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			fmt.Fprintf(stdout, ": %v", err)
		}
		fmt.Fprintln(stdout)
		return nil
	}
	// Cancelled. The workflow's progress, read again from its history, has the batches' last states.
	var p wire.Progress
	qerr := errors.New("its starter has exited, and its server with it")
	if !sess.ownerGone() {
		qctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		p, qerr = queryProgress(qctx, c, id)
		cancel()
	}
	batches := last.batches
	if qerr == nil {
		batches = p.Batches
	}
	var open []wire.BatchProgress
	cancelled, batchDone := 0, 0
	for _, b := range batches {
		switch {
		case b.Status == wire.BatchStatusCancelled:
			cancelled++
			batchDone += b.Done
		case !b.Status.Terminal():
			open = append(open, b)
		}
	}
	cells := max(p.Cells, last.total)
	// Without the store, the workflow's totals (finished passes) and the last heartbeats of the passes cut short
	// are a lower bound; the lines a cancelled batch completed are recorded, but in no pass's totals.
	recorded, exact := max(p.CellsDone, last.done)+batchDone, false
	if sess.store != nil {
		if n, ok := settledCount(ctx, sess, cmp.Or(p.RunID, id)); ok {
			recorded, exact = n, true
		}
	}
	line := "cancelled: "
	if !exact {
		line += "at least "
	}
	line += fmt.Sprintf("%s of %s cells recorded", thousands(recorded), thousands(cells))
	if cancelled > 0 {
		line += fmt.Sprintf(", %d provider %s cancelled", cancelled, plural(cancelled, "batch", "batches"))
	}
	fmt.Fprintln(stdout, line)
	if !exact {
		fmt.Fprintf(stdout, "  (the count is the run's last progress; with --store or %s naming the workers' results store it is exact)\n", store.EnvDSN)
	}
	if qerr != nil && len(batches) > 0 && sess.ownerGone() {
		// The run ended cancelled, which it does only once each of its batches has ended at the provider and what
		// it completed is recorded: their last states went with the starter's server.
		fmt.Fprintf(stdout, "  %d provider %s: each was cancelled at the provider, and what it completed is recorded "+
			"(the starter that ran them has exited; `%s` serves the run's history with each batch's end)\n",
			len(batches), plural(len(batches), "batch", "batches"), sess.flags.command("dev"))
	} else if qerr != nil && len(batches) > 0 {
		fmt.Fprintf(stdout, "  the run's batches could not be read again (%v); as last seen:\n", qerr)
		for _, b := range (snapshot{batches: batches}).batchLines(false) {
			fmt.Fprintf(stdout, "    %s\n", b)
		}
	} else {
		for _, b := range open {
			fmt.Fprintf(stdout, "  %s: batch %s was last seen %s, not ended: check it at the provider\n", b.Model, b.ID, b.Status)
		}
	}
	fmt.Fprintf(stdout, "  nothing recorded is lost: `%s` writes it, and `%s` resumes the run, calling only the cells "+
		"without a record\n", sess.flags.command("export", id, "--output", "DIR"), sess.resumeCommand(id, ""))
	return nil
}

// settledCount is the number of run's records once no more have landed for cancelSettle (the calls in flight when
// the workflow ended are still being recorded), or when ctx ends. ok is false when the store cannot be read.
func settledCount(ctx context.Context, sess *session, run string) (int, bool) {
	n, err := sess.store.Counts(ctx, run)
	if err != nil {
		return 0, false
	}
	if sess.ownerGone() {
		return n.Records, true // the worker that recorded the run's cells has exited: nothing more lands
	}
	deadline := time.Now().Add(cancelSettle)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return n.Records, true
		case <-time.After(cancelPoll):
		}
		m, err := sess.store.Counts(ctx, run)
		if err != nil {
			return n.Records, true
		}
		if m.Records != n.Records {
			n, deadline = m, time.Now().Add(cancelSettle)
		}
	}
	return n.Records, true
}

// describeRun describes the latest execution of workflow id, within rpcTimeout.
func describeRun(ctx context.Context, c client.Client, id string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	return c.DescribeWorkflowExecution(ctx, id, "")
}

// queryProgress asks run id's workflow for its progress.
func queryProgress(ctx context.Context, c client.Client, id string) (wire.Progress, error) {
	var p wire.Progress
	v, err := c.QueryWorkflow(ctx, id, "", wire.QueryProgress)
	if err != nil {
		return p, fmt.Errorf("query the progress of %s: %w", id, err)
	}
	if err := v.Get(&p); err != nil {
		return p, fmt.Errorf("decode the progress of %s: %w", id, err)
	}
	return p, nil
}

// hasPollers reports whether a worker polls the workflow task queue tq. When the server cannot say, it assumes
// one does (the wait has a deadline anyway).
func hasPollers(ctx context.Context, c client.Client, tq string) bool {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := c.DescribeTaskQueue(ctx, tq, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return true
	}
	return len(resp.GetPollers()) > 0
}

// statusWord names a workflow status as the output says it: "cancelled", "timed out".
func statusWord(st enumspb.WorkflowExecutionStatus) string {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "cancelled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed out"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "continued as new"
	}
	return strings.ToLower(st.String())
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
