package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

// runStateInterrupted is the state `starter runs` shows for a run recorded as running in embedded mode when no
// starter serves the state dir: nothing can be running it, and `starter run ID` resumes it.
const runStateInterrupted = "interrupted"

// runRow is one run as `starter runs` lists it.
type runRow struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Status   string    `json:"status"`
	Cells    int       `json:"cells"`
	Recorded int       `json:"recorded"`
	OK       int       `json:"ok"`
	Unparsed int       `json:"unparsed"`
	Failed   int       `json:"failed"`
	CostUSD  usage.USD `json:"cost_usd"`
	Models   []string  `json:"models"`
	Started  time.Time `json:"started"`
	// DurationSeconds is the run's wall time: as its workflow measured it when it exported, else the time from
	// its start to its last recorded state (or to now while it runs).
	DurationSeconds float64 `json:"duration_seconds"`
}

func newRunsCmd() *cobra.Command {
	var (
		conn   connFlags
		name   string
		status string
		asJSON bool
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the runs of the results store, newest first",
		Long: `Runs lists the runs the results store holds (--store, SILICO_STORE or <state-dir>/results.db), newest first:
id, name, status (running, completed, failed, cancelled, terminated, stopped: its starter was interrupted with
Ctrl-C, or interrupted: recorded as running by a starter that is no longer there; a stopped or interrupted run
goes on only with ` + "`starter run ID`" + `), cells recorded ok/unparsed/failed of the grid's total, cost, models, when it
started and how long it took. It needs no Temporal server; when one serves the state dir (a running starter or
` + "`starter dev`" + `), or --address names one, the status is the server's. --name keeps the runs whose name or id
contains the text, --status those in that state. Every command that takes a run id also takes a unique prefix.`,
		Example: `  starter runs
  starter runs --status running --json
  starter status silico-ipip-50   # a unique prefix of an id`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if !conn.storeNamed() {
				return withCode(exitUsage, fmt.Errorf("with --address, runs lists the workers' results store: name it with --store or %s", store.EnvDSN))
			}
			if dsn := conn.dsn(); !store.IsPostgres(dsn) {
				if _, err := os.Stat(dsn); err != nil {
					if asJSON {
						_, err := fmt.Fprintln(cmd.OutOrStdout(), "[]")
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "no runs: there is no results store at %s yet\n", dsn)
					return nil
				}
			}
			st, err := store.Open(ctx, conn.dsn())
			if err != nil {
				return fmt.Errorf("open results store: %w", err)
			}
			defer st.Close()
			c, done := runsServer(ctx, &conn, cmd.ErrOrStderr())
			defer done()
			rows, err := listRuns(ctx, st, c, conn.embedded(), name, status, limit)
			if err != nil {
				return err
			}
			if asJSON {
				if rows == nil {
					rows = []runRow{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			return printRuns(cmd.OutOrStdout(), rows)
		},
	}
	// runs starts no server: with --address it asks that one, else the one a starter serves the state dir with.
	conn.client.buildFlags(cmd.Flags())
	conn.store.buildFlags(cmd.Flags())
	conn.log.buildFlags(cmd.Flags())
	cmd.Flags().StringVar(&name, "name", "", "only runs whose name or id contains this text")
	cmd.Flags().StringVar(&status, "status", "", "only runs in this state: running, completed, failed, cancelled, terminated, stopped, interrupted")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as JSON")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many runs (0: all)")
	acceptUnused(cmd.Flags(), "runs")
	return cmd
}

// runsServer is a client of the server that knows the runs' status, if one answers: with --address, that server;
// in embedded mode, the server of a starter running on the state dir (none is started for a listing). done
// closes it.
func runsServer(ctx context.Context, conn *connFlags, stderr io.Writer) (client.Client, func()) {
	if conn.embedded() {
		info, ok := liveServer(ctx, conn.store.stateDir)
		if !ok {
			return nil, func() {}
		}
		c, err := client.DialContext(ctx, client.Options{HostPort: info.HostPort, Namespace: conn.client.namespace, Logger: quietLogger{}})
		if err != nil {
			return nil, func() {}
		}
		return c, c.Close
	}
	sess, err := open(ctx, conn, sessionOptions{}, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "note: the status is the one recorded in the store: %v\n", err)
		return nil, func() {}
	}
	return sess.client, sess.Close
}

// listRuns is the store's runs as rows, filtered by name (a substring of the name or id) and status, at most limit
// (0: all). c, when not nil, is asked for each run's status, which wins over the state recorded in the store.
func listRuns(ctx context.Context, st store.Store, c client.Client, embedded bool, name, status string, limit int) ([]runRow, error) {
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var rows []runRow
	for _, r := range runs {
		row := runRow{ID: r.ID, Started: r.Created, Status: r.State}
		if b, err := st.LoadRun(ctx, r.ID); err == nil {
			if spec, err := specfile.ParseSaved(b, r.ID); err == nil {
				row.Name, row.Cells = spec.Name, spec.NumCells()
				for _, m := range spec.Models {
					row.Models = append(row.Models, m.ID)
				}
			}
		}
		if name != "" && !strings.Contains(row.Name, name) && !strings.Contains(r.ID, name) {
			continue
		}
		// Without a server what the starters recorded stands; with one, its word: a retry of a finished run is
		// running again, and a run that no worker polls for is stopped or interrupted.
		served := c == nil
		if c != nil {
			dctx, cancel := context.WithTimeout(ctx, rpcTimeout)
			if d, err := c.DescribeWorkflowExecution(dctx, r.ID, ""); err == nil {
				row.Status = stateWord(d.GetWorkflowExecutionInfo().GetStatus())
				served = row.Status != store.RunRunning || hasPollers(ctx, c, d.GetWorkflowExecutionInfo().GetTaskQueue())
			}
			cancel()
		}
		switch {
		case row.Status == store.RunRunning && r.State == store.RunStopped && (c == nil && embedded || !served):
			row.Status = store.RunStopped // its starter was interrupted, and nothing continues it
		case row.Status == store.RunRunning && (c == nil && embedded || !served):
			row.Status = runStateInterrupted
		case row.Status == "" && r.HasElapsed:
			row.Status = store.RunCompleted // exported by a starter that recorded no state
		case row.Status == "":
			row.Status = "unknown"
		}
		if status != "" && row.Status != status {
			continue
		}
		if n, err := st.Counts(ctx, r.ID); err == nil {
			row.Recorded, row.OK, row.Unparsed, row.Failed, row.CostUSD = n.Records, n.OK, n.Unparsed, n.Failed, n.CostUSD
		}
		switch {
		case r.HasElapsed:
			row.DurationSeconds = r.Elapsed.Seconds()
		case row.Status == store.RunRunning:
			row.DurationSeconds = now.Sub(r.Created).Seconds()
		case store.Terminal(r.State) && !r.StateAt.IsZero():
			row.DurationSeconds = max(0, r.StateAt.Sub(r.Created).Seconds())
		}
		rows = append(rows, row)
		if limit > 0 && len(rows) == limit {
			break
		}
	}
	return rows, nil
}

// printRuns writes rows as a table.
func printRuns(w io.Writer, rows []runRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no runs")
		return err
	}
	table := [][]string{{"ID", "NAME", "STATUS", "CELLS ok/unparsed/failed of total", "COST", "MODELS", "STARTED", "DURATION"}}
	for _, r := range rows {
		table = append(table, []string{r.ID, r.Name, r.Status,
			fmt.Sprintf("%s/%s/%s of %s", thousands(r.OK), thousands(r.Unparsed), thousands(r.Failed), thousands(r.Cells)),
			r.CostUSD.Display(), strings.Join(r.Models, ","), r.Started.Local().Format("2006-01-02 15:04:05"),
			duration(r)})
	}
	var b strings.Builder
	writeTable(&b, "", table, nil)
	_, err := io.WriteString(w, b.String())
	return err
}

// duration shows a run's wall time, "-" when it is not known (a run interrupted before it exported).
func duration(r runRow) string {
	if r.DurationSeconds == 0 && r.Status != store.RunCompleted {
		return "-"
	}
	return (time.Duration(r.DurationSeconds * float64(time.Second))).Round(time.Second).String()
}
