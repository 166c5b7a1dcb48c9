package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/silicolab/silico/compare"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/temporalclient"
)

func newCompareCmd() *cobra.Command {
	var (
		conn   connFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B [--output DIR]",
		Short: "Set two runs side by side: compare.csv, compare.html and a summary",
		Long: `Compare reads two runs from the results store (--store or SILICO_STORE, default .silico/results.db) and
matches their cells by cell id (model id / seed / item / persona): a retest of one spec (run it again with
--new), the same spec weeks later (drift), or two models given the same model id in two specs. Per model and
item, and per model over all its items, it writes the W1 and Jensen–Shannon distances between the two runs'
answer distributions, the mean score shift B − A with a 95% bootstrap interval over personas (1000 resamples,
seed 1), the exact agreement of the written answers, Cohen's κ, the ICC(2,1) of the cells' expected scores, and
the cells matched and only in one run. Each of RUN_A and RUN_B is a run id, a unique prefix of one, or a spec
file (its run). It writes compare.csv and compare.html to DIR (default out/<A>-vs-<B>) and prints a summary per
model. It needs no Temporal server and no network.`,
		Example: `  starter compare silico-ipip-50-quickstart-3f2a silico-ipip-50-quickstart-3f2a-20260301T101500
  starter compare examples/quickstart/experiment.yaml silico-ipip-50-quickstart-3f2a-2026 -o out/retest`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if dsn := conn.dsn(); !store.IsPostgres(dsn) {
				// Opening a SQLite path that does not exist would create an empty store.
				if _, err := os.Stat(dsn); err != nil {
					return fmt.Errorf("no results store at %s (set --store, SILICO_STORE or --state-dir): %w", dsn, err)
				}
			}
			st, err := store.Open(ctx, conn.dsn())
			if err != nil {
				return fmt.Errorf("open results store: %w", err)
			}
			defer st.Close()
			var sides [2]*compare.Side
			for i, ref := range args {
				if sides[i], err = compareSide(ctx, st, &conn, ref, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			c, err := compare.Compare(sides[0], sides[1], compare.Options{Samples: compare.DefaultSamples, Seed: compare.DefaultSeed})
			if err != nil {
				return err
			}
			if output == "" {
				output = filepath.Join(experiment.DefaultOutputRoot, sides[0].ID+"-vs-"+sides[1].ID)
			}
			out := cmd.OutOrStdout()
			if err := compare.WriteSummary(out, c); err != nil {
				return err
			}
			csvPath, htmlPath, err := compare.WriteFiles(output, c, compare.Describe(sides[0]), compare.Describe(sides[1]))
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "  compare: %s\n  compare: %s\n", csvPath, htmlPath)
			return nil
		},
	}
	conn.store.buildFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output directory (default "+experiment.DefaultOutputRoot+"/<A>-vs-<B>)")
	acceptUnused(cmd.Flags(), "compare")
	return cmd
}

// compareSide loads the run ref names: a run id, a unique prefix of one, or a spec file, which names the run
// `starter run` gives it (workflowID).
func compareSide(ctx context.Context, st store.Store, conn *connFlags, ref string, stderr io.Writer) (*compare.Side, error) {
	name := ref
	if !looksLikeRunID(ref) {
		spec, err := loadSpec(stderr, ref)
		if err != nil {
			return nil, withCode(exitUsage, err)
		}
		name = workflowID(spec)
	}
	id, known, err := resolveRun(ctx, st, name)
	if err != nil {
		return nil, err
	}
	if !known {
		// compare has no Temporal flags: the listing it suggests carries only the store's.
		lister := *conn
		lister.client.namespace = envOr(temporalclient.EnvNamespace, temporalclient.DefaultNamespace)
		if name != ref {
			return nil, withCode(exitUsage, fmt.Errorf("spec file %s has no run in %s (its run would be %s): run it first; `%s` lists the runs",
				ref, st.Location(), name, lister.command("runs")))
		}
		return nil, withCode(exitUsage, fmt.Errorf("no run %s in %s: `%s` lists the runs", ref, st.Location(), lister.command("runs")))
	}
	spec, err := loadRunSpec(ctx, st, id)
	if err != nil {
		return nil, err
	}
	return compare.Load(ctx, st, spec, id)
}
