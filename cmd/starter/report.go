package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/report"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/wire"
)

func newReportCmd() *cobra.Command {
	var (
		conn   connFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "report ID [--output DIR]",
		Short: "Write a run's report.html from the results store",
		Long: `Report reads the run's spec and results from the results store (--store or SILICO_STORE, default
.silico/results.db),
computes reliability, item statistics and seed agreement as the export does, and writes one self-contained
report.html to DIR (default out/<ID>, where starter run writes). It needs no Temporal server and no network; the
page loads nothing and runs no scripts. The run's wall time is taken from DIR/summary.json when an export left
one there. A run still in progress reports what has finished.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := conn.openExisting(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			id, _, err := resolveRun(ctx, st, args[0])
			if err != nil {
				return err
			}
			if output == "" {
				output = filepath.Join(experiment.DefaultOutputRoot, id)
			}
			spec, err := loadRunSpec(ctx, st, id)
			if err != nil {
				return err
			}
			path, err := writeReport(ctx, st, spec, id, output, elapsedFrom(output))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", path)
			return nil
		},
	}
	conn.store.buildFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output directory (default "+experiment.DefaultOutputRoot+"/<ID>)")
	acceptUnused(cmd.Flags(), "report")
	return cmd
}

// specStore is what loadRunSpec reads of the results store.
type specStore interface {
	LoadRun(ctx context.Context, run string) ([]byte, error)
	Location() string
}

// loadRunSpec reads the spec a run was started with from the results store, with defaults applied.
func loadRunSpec(ctx context.Context, st specStore, id string) (*experiment.Spec, error) {
	b, err := st.LoadRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("run %s in %s: %w", id, st.Location(), err)
	}
	return specfile.ParseSaved(b, id)
}

// writeReport analyses the run's records and writes dir/report.html.
func writeReport(ctx context.Context, src results.Source, spec *experiment.Spec, id, dir string, elapsed time.Duration) (string, error) {
	r, err := report.Analyze(ctx, src, spec, id, elapsed)
	if err != nil {
		return "", err
	}
	return report.WriteFile(dir, r)
}

// elapsedFrom returns the wall time recorded in dir/summary.json, 0 when there is none.
func elapsedFrom(dir string) time.Duration {
	b, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		return 0
	}
	var s wire.Summary
	if json.Unmarshal(b, &s) != nil {
		return 0
	}
	return time.Duration(s.ElapsedSeconds * float64(time.Second))
}

// reportAfterRun writes report.html next to a finished run's outputs for `run --report`. It reads the results
// store of this session, or in client mode the --store file, which must then be reachable from here.
func reportAfterRun(ctx context.Context, sess *session, spec *experiment.Spec, id, dir string, elapsed time.Duration, stdout io.Writer) error {
	if sess.store == nil {
		if _, err := os.Stat(sess.flags.dsn()); err != nil {
			return errors.New("--report needs the results store: give --store (the workers' file), or run `starter report` where it is")
		}
		if err := sess.openStore(ctx); err != nil {
			return err
		}
	}
	path, err := writeReport(ctx, sess.store, spec, id, dir, elapsed)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(stdout, "  report: %s\n", path)
	return nil
}
