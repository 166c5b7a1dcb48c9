package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/silicolab/silico/store"
)

func newCacheCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Inspect and prune the response cache of a results store",
		Long: `The response cache keeps every answer a model gave under a digest of its request (endpoint, model,
messages, seed and parameters), in the results store. A later call with the same digest is answered from it
instead of the provider: the cell is recorded with cached: true and its cost counted as saved. These commands
work on the store directly; no server needs to run.`,
	}
	cmd.AddCommand(newCacheStatsCmd(), newCachePruneCmd())
	return cmd
}

func newCacheStatsCmd() *cobra.Command {
	var sf storeOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Entries, bytes and lookups (hits, misses, invalid entries) of the cache, per model name",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer func() { _ = st.Close() }()
			stats, err := st.CacheStats(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(stats)
			}
			return printCacheStats(cmd.OutOrStdout(), st.Location(), stats)
		},
	}
	sf.buildStoreOnlyFlags(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the statistics as JSON")
	return cmd
}

func printCacheStats(w io.Writer, where string, stats []store.CacheStats) error {
	fmt.Fprintf(w, "response cache of %s\n", where)
	if len(stats) == 0 {
		_, err := fmt.Fprintln(w, "  empty: no answer cached, no lookup made")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "MODEL\tENTRIES\tBYTES\tHITS\tMISSES\tINVALID\tHIT RATE\t")
	var total store.CacheStats
	for _, s := range stats {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Model, thousands(s.Entries), bytesSize(s.Bytes),
			thousands(s.Hits), thousands(s.Misses), thousands(s.Invalid), hitRate(s.CacheTally))
		total.Entries += s.Entries
		total.Bytes += s.Bytes
		total.CacheTally.Add(s.CacheTally)
	}
	if len(stats) > 1 {
		fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%s\t%s\t%s\t\n", thousands(total.Entries), bytesSize(total.Bytes),
			thousands(total.Hits), thousands(total.Misses), thousands(total.Invalid), hitRate(total.CacheTally))
	}
	return tw.Flush()
}

func hitRate(t store.CacheTally) string {
	if t.Hits+t.Misses == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(t.Hits)/float64(t.Hits+t.Misses))
}

func bytesSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func newCachePruneCmd() *cobra.Command {
	var (
		sf        storeOptions
		olderThan time.Duration
		model     string
		run       string
		all       bool
	)
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Delete cache entries by age, model name or the run that wrote them",
		Long: `Prune deletes the cache entries that match every filter given: --older-than (written longer ago than
this), --model (the model name sent to the provider) and --run (the run id that wrote them). --all deletes every
entry. Results already recorded are not touched; a later run calls the provider again for the pruned requests.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := store.CacheFilter{Model: model, Run: run}
			if olderThan < 0 {
				return withCode(exitUsage, fmt.Errorf("--older-than %v is negative; want an age such as 7d, 12h or 30m", olderThan))
			}
			if olderThan > 0 {
				f.Before = time.Now().Add(-olderThan)
			}
			if f == (store.CacheFilter{}) && !all {
				return withCode(exitUsage, errors.New("say what to prune: --older-than, --model, --run, or --all for every entry"))
			}
			if all && f != (store.CacheFilter{}) {
				return withCode(exitUsage, errors.New("--all deletes every entry: give it alone, or filters without it"))
			}
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer func() { _ = st.Close() }()
			n, err := st.CachePrune(cmd.Context(), f)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pruned %s cache entries%s from %s\n", thousands(n), describeFilter(f), st.Location())
			return nil
		},
	}
	sf.buildStoreOnlyFlags(cmd.Flags())
	cmd.Flags().Var(ageValue{&olderThan}, "older-than", "prune entries written longer ago than this: days, hours or minutes (e.g. 7d, 12h, 30m, 1d12h)")
	cmd.Flags().StringVar(&model, "model", "", "prune the entries of this model name")
	cmd.Flags().StringVar(&run, "run", "", "prune the entries written by this run id")
	cmd.Flags().BoolVar(&all, "all", false, "prune every entry")
	return cmd
}

func describeFilter(f store.CacheFilter) string {
	var parts []string
	if !f.Before.IsZero() {
		parts = append(parts, "written before "+f.Before.UTC().Format(time.RFC3339))
	}
	if f.Model != "" {
		parts = append(parts, "of model "+f.Model)
	}
	if f.Run != "" {
		parts = append(parts, "written by run "+f.Run)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
