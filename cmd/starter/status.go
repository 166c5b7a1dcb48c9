package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
)

// statusSample is how long `starter status` watches a running run to measure its rate, when not --watch, and
// statusReadTries how many reads in a row may fail (a server restarting) before it gives up.
const (
	statusSample    = 2 * time.Second
	statusReadTries = 5
)

func newStatusCmd() *cobra.Command {
	var (
		conn  connFlags
		watch bool
		every time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status ID",
		Short: "Show where a run stands",
		Long: `Status shows where run ID (or the run whose id starts with ID) stands: cells done of the total, failed,
the rate, the time elapsed, the time left at that rate and the money spent so far; a finished run's summary.
A running run is watched for two seconds to measure its rate; --watch follows it, a line every --every, until
it ends. Without --address it uses the server of the starter running on --state-dir, or starts that state dir's
server for the command.`,
		Example: `  starter runs --status running
  starter status silico-ipip-50 --watch`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRun(cmd, &conn, args[0], func(ctx context.Context, sess *session, id string) error {
				return showStatus(ctx, sess, id, watch, every, cmd.OutOrStdout())
			})
		},
	}
	conn.registerSession(cmd.Flags())
	cmd.Flags().BoolVar(&watch, "watch", false, "follow the run until it ends, a line every --every")
	cmd.Flags().DurationVar(&every, "every", 5*time.Second, "interval of the lines of --watch")
	acceptUnused(cmd.Flags(), "status")
	return cmd
}

// showStatus prints where run id stands; with watch, a line every `every` until it ends.
func showStatus(ctx context.Context, sess *session, id string, watch bool, every time.Duration, out io.Writer) error {
	w := &watchState{}
	s, err := readProgressSized(ctx, sess.client, sess.store, id, w)
	if err != nil {
		if _, missing := errors.AsType[*serviceerror.NotFound](err); missing {
			return sess.noSuchRun(ctx, id, fmt.Sprintf("%s namespace %s", sess.hostPort, sess.flags.client.namespace))
		}
		return err
	}
	first, firstAt := s, time.Now() // the rate is the cells recorded between two reads over the time between them
	fmt.Fprintf(out, "%s: %s\n", id, s.status)
	if s.status == "Running" && !hasPollers(ctx, sess.client, s.taskQueue) {
		fmt.Fprintf(out, "  %s: no worker runs it (the starter that ran it has gone); %s of %s cells recorded · %s\n"+
			"  nothing continues it until `%s` resumes it, calling only the cells without a record\n",
			sess.stoppedWord(ctx, id), thousands(s.done), thousands(s.total), s.usage.CostUSD.Display(), sess.resumeCommand(id, ""))
		return nil
	}
	if s.paused != nil {
		fmt.Fprintf(out, "  %s: `%s` continues it\n", s.pausedLine(), sess.flags.command("resume", id))
	}
	failures := 0
	for s.status == "Running" {
		wait := statusSample
		if watch {
			wait = every
		}
		select {
		case <-ctx.Done():
			return withCode(exitInterrupted, errors.New(""))
		case <-time.After(wait):
		}
		next, err := readProgressSized(ctx, sess.client, sess.store, id, w)
		if err != nil {
			if sess.ownerGone() {
				fmt.Fprintf(out, "  the starter that ran it has exited, and its server with it: `%s` shows how it ended\n",
					sess.flags.command("runs", "--name", id))
				return nil
			}
			if failures++; failures >= statusReadTries {
				return fmt.Errorf("run %s: the server stopped answering: %w", id, err)
			}
			continue
		}
		failures = 0
		rate := float64(next.done-first.done) / time.Since(firstAt).Seconds()
		s = next
		if s.status != "Running" {
			fmt.Fprintf(out, "%s: %s\n", id, s.status)
			break
		}
		fmt.Fprintf(out, "  passes %d/%d · %s\n", s.passesDone, s.passes, s.statusLine(rate, time.Since(s.started)))
		for _, b := range s.batchLines(false) {
			fmt.Fprintf(out, "  %s\n", b)
		}
		for _, r := range s.retrying {
			fmt.Fprintf(out, "  %s\n", r)
		}
		if !watch {
			break
		}
	}
	var res wire.Result
	if s.status == "Completed" && sess.client.GetWorkflow(ctx, id, "").Get(ctx, &res) == nil {
		printSummary(out, res)
	} else if s.status != "Running" {
		fmt.Fprintf(out, "  %s of %s cells recorded · %d failed · %s\n", thousands(s.done), thousands(s.total), s.failed, s.usage.CostUSD.Display())
		for _, b := range s.batchLines(false) {
			fmt.Fprintf(out, "  %s\n", b)
		}
	}
	switch link := sess.uiLink(id); {
	case sess.shared != nil && link != "":
		fmt.Fprintf(out, "  Temporal UI: %s\n", link)
	case sess.dev != nil:
		// This command's own server stops when it returns: a link to it would be dead.
		fmt.Fprintf(out, "  Temporal UI: `%s` serves the run's history\n", sess.flags.command("dev"))
	case link != "":
		fmt.Fprintf(out, "  Temporal UI: %s\n", link)
	}
	return nil
}

// statusLine is line with the time elapsed since the execution started.
func (s snapshot) statusLine(rate float64, elapsed time.Duration) string {
	return fmt.Sprintf("elapsed %s · %s", elapsed.Round(time.Second), s.line(rate))
}

// stoppedWord is how a run that no worker serves is named: "stopped" when its starter recorded that it was
// interrupted (Ctrl-C), "interrupted" otherwise (killed).
func (s *session) stoppedWord(ctx context.Context, id string) string {
	if s.store != nil {
		if runs, err := s.store.Runs(ctx); err == nil {
			for _, r := range runs {
				if r.ID == id && r.State == store.RunStopped {
					return store.RunStopped
				}
			}
		}
	}
	return runStateInterrupted
}
