package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
		models string
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B [--output DIR] [--models A_MODEL=B_MODEL,...]",
		Short: "Set two runs side by side: compare.csv, compare.html and a summary",
		Long: `Compare reads two runs from the results store (--store or SILICO_STORE, default .silico/results.db) and
sets their cells side by side: a retest of one spec (run it again with --new), the same spec weeks later
(drift), other seeds, or model A against model B. Cells pair by item id and persona id; models pair by id when
both specs list the same model ids, else by position (A's first with B's first...), or as --models names them
(models it does not name pair by id where they can); seeds pair by value when both specs list the same seeds,
else by position. The summary, compare.csv and compare.html say the pairing. Per model pair and item, and per
model pair over all its items, it writes the W1 and Jensen–Shannon distances between the two runs' answer
distributions, the mean score shift B − A with a 95% bootstrap interval over personas (resamples and seed from
run A's spec's analysis.bootstrap), the exact agreement of the written answers, Cohen's κ, the ICC(2,1) of the
cells' expected scores, the cells matched and only in one run, and the served models and system fingerprints
of each run with whether they changed. Each of RUN_A and RUN_B is a run id, a unique prefix of one, or a spec
file (its run). It writes compare.csv and compare.html to DIR (default out/<A>-vs-<B>) and prints a summary per
model pair. It needs no Temporal server and no network.`,
		Example: `  starter compare silico-ipip-50-quickstart-3f2a silico-ipip-50-quickstart-3f2a-20260301T101500
  starter compare examples/quickstart/experiment.yaml silico-ipip-50-quickstart-3f2a-2026 -o out/retest
  starter compare run-gpt run-llama --models gpt-4o=llama-3-8b`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var pairs []compare.ModelPair
			if models != "" {
				var err error
				if pairs, err = compare.ParseModelPairs(models); err != nil {
					return withCode(exitUsage, fmt.Errorf("--models: %w", err))
				}
			}
			st, err := conn.openExisting(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			var sides [2]*compare.Side
			for i, ref := range args {
				if sides[i], err = compareSide(ctx, st, &conn, ref, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			opt := compare.SpecOptions(sides[0].Spec)
			opt.Models = pairs
			c, err := compare.Compare(sides[0], sides[1], opt)
			if errors.Is(err, compare.ErrUnpaired) {
				return withCode(exitUsage, err)
			}
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
	cmd.Flags().StringVar(&models, "models", "", "pair models by hand: A_MODEL=B_MODEL,... (default: by id, else by position)")
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
