package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/silicolab/silico/estimate"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
)

func newEstimateCmd() *cobra.Command {
	var asJSON, noCache bool
	var sf storeOptions
	cmd := &cobra.Command{
		Use:   "estimate SPEC...",
		Short: "Size specs before running them: calls, tokens, cost, least wall time",
		Long: `Estimate prints, per model and in total: the calls, the prompt tokens (exact tiktoken counts of every
rendered prompt; an upper bound in cumulative mode), the most completion tokens (calls x max_tokens), the cost
range (one completion token per call to max_tokens per call) and the least wall time the models' rpm and tpm
allow, or their latency with the calls they may have in flight (the simulator's latency for a sim model, else
the median latency of the model's calls in earlier runs of the store), with the limit that sets it; "unknown"
when neither is known. It calls no model and needs no server.

When the results store exists (--store, SILICO_STORE or <state-dir>/results.db), estimate also looks every cell
up in its response cache: cells it already answers make no call, so the calls, tokens, cost and wall time are
those of the other cells, and what the cached cells would cost is shown as saved. --no-cache estimates a run
without the cache. --json prints the estimate as JSON (min_wall_ns in nanoseconds). Exit code 2 when any spec is
invalid.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := llm.NewTokenizer()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			bad := 0
			for i, path := range args {
				spec, err := loadSpec(cmd.ErrOrStderr(), path)
				if err != nil {
					bad++
					fmt.Fprintf(cmd.ErrOrStderr(), "%v\n", err)
					continue
				}
				if noCache {
					spec.DisableCache()
				}
				est, err := estimate.Compute(spec, tok)
				if err == nil {
					est, err = withCache(cmd.Context(), est, spec, &sf)
				}
				if err != nil {
					bad++
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", path, err)
					continue
				}
				if asJSON {
					enc := json.NewEncoder(out)
					enc.SetIndent("", "  ")
					if err := enc.Encode(est); err != nil {
						return err
					}
					continue
				}
				if i > 0 {
					fmt.Fprintln(out)
				}
				fmt.Fprintf(out, "%s: %s\n", path, spec.Summary())
				if err := printEstimate(out, est); err != nil {
					return err
				}
			}
			if bad > 0 {
				return withCode(exitUsage, fmt.Errorf("%d of %d specs invalid", bad, len(args)))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the estimate as JSON")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "estimate a run that neither reads nor writes the response cache")
	sf.buildStoreOnlyFlags(cmd.Flags())
	return cmd
}

// withCache is est for a run in which the cells the store's response cache answers make no call. Without a
// store there is nothing cached, and est is returned as it is.
//
// It also bounds each model's wall time by its latency where one is known: the simulator's for a sim model, else
// the median of the model's calls in the store's earlier runs (modelLatencies).
func withCache(ctx context.Context, est estimate.Estimate, spec *experiment.Spec, sf *storeOptions) (estimate.Estimate, error) {
	st, err := sf.open(ctx)
	if errors.Is(err, errNoStore) {
		return est.WithLatency(spec, modelLatencies(ctx, spec, nil)), nil
	}
	if err != nil {
		return est, err
	}
	defer func() { _ = st.Close() }()
	est = est.WithLatency(spec, modelLatencies(ctx, spec, st))
	held, err := respcache.Held(ctx, st, spec)
	if err != nil {
		return est, err
	}
	return est.WithCache(spec, held), nil
}

// printDryRun prints what a run of spec would do, without running it.
func printDryRun(ctx context.Context, w io.Writer, spec *experiment.Spec, sf *storeOptions) error {
	tok, err := llm.NewTokenizer()
	if err != nil {
		return err
	}
	est, err := estimate.Compute(spec, tok)
	if err != nil {
		return err
	}
	if est, err = withCache(ctx, est, spec, sf); err != nil {
		return err
	}
	fmt.Fprintf(w, "dry run: %s (run id %s)\n", spec.Summary(), workflowID(spec))
	return printEstimate(w, est)
}

// printEstimate writes est as a table, a row per model and a total row, then its notes.
func printEstimate(w io.Writer, est estimate.Estimate) error {
	rows := [][]string{{"MODEL", "CELLS", "CACHED", "CALLS", "PROMPT TOKENS", "MAX COMPLETION", "COST", "MIN WALL", "BOUND BY"}}
	latency, unpriced := false, false
	for _, m := range est.Models {
		cost := "no price known; set price: in the spec"
		if m.Priced {
			cost = usdRange(m.MinCostUSD, m.MaxCostUSD)
		}
		latency = latency || !m.WallKnown()
		unpriced = unpriced || !m.Priced
		w := wall(m.MinWall)
		switch {
		case !m.WallKnown():
			w = "unknown"
		case m.LimitedBy == estimate.LimitBatch:
			w = "within 24 h"
		}
		rows = append(rows, []string{m.Model, thousands(m.Cells), thousands(m.Cached), thousands(m.Calls), thousands(m.PromptTokens),
			thousands(m.MaxCompletionTokens), cost, w, m.LimitedBy})
	}
	if len(est.Models) > 1 {
		cost := usdRange(est.MinCostUSD, est.MaxCostUSD)
		if unpriced {
			cost += " (priced models)"
		}
		w := wall(est.MinWall)
		if est.MinWall == 0 {
			w = "unknown"
		}
		rows = append(rows, []string{"total", thousands(est.Cells), thousands(est.Cached), thousands(est.Calls), thousands(est.PromptTokens),
			thousands(est.MaxCompletionTokens), cost, w, ""})
	}
	if est.Cached == 0 {
		// Nothing cached: the cells are the calls.
		for i := range rows {
			rows[i] = append(rows[i][:1:1], rows[i][3:]...)
			if i == 0 {
				rows[i][1] = "CALLS"
			}
		}
	}
	// Numbers align right, words left.
	right := []bool{false, true, true, true, true, true, false, true, false}
	if est.Cached == 0 {
		right = append(right[:1:1], right[3:]...)
	}
	var b strings.Builder
	writeTable(&b, "  ", rows, right)
	if est.ImageTokens > 0 {
		fmt.Fprintf(&b, "  note: %s of the prompt tokens are pictures, at OpenAI's vision rates\n", thousands(est.ImageTokens))
	}
	for _, n := range est.Notes {
		b.WriteString("  note: " + n + "\n")
	}
	if est.Cached > 0 {
		fmt.Fprintf(&b, "  note: the response cache already answers %s of %s cells: they make no call, and save %s\n",
			thousands(est.Cached), thousands(est.Cells), usdRange(est.SavedMinUSD, est.SavedMaxUSD))
	}
	for _, m := range est.Models {
		if be := m.Batch; be != nil {
			fmt.Fprintf(&b, "  note: model %s runs in batch mode: %s batches (at most %d per pass) of at most %s requests and %s, "+
				"%s to upload; the cost is at the batch price, %s sent synchronously; the provider answers within 24 h\n",
				m.Model, thousands(be.Batches), be.MaxPerPass, thousands(be.MaxRequests), mib(int64(be.MaxBytes)), mib(be.Bytes),
				usdRange(be.SyncMinCostUSD, be.SyncMaxCostUSD))
		}
	}
	if latency {
		b.WriteString("  note: a least wall time is unknown where no rpm/tpm limit binds and the model's latency is not known: " +
			"give the model's rpm/tpm, or run it once (the estimate then uses the median latency of its calls in this store)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTable writes rows as columns two spaces apart, each line after indent; right[i] aligns column i to the
// right (numbers), the others to the left (words); right may be shorter than a row.
func writeTable(b *strings.Builder, indent string, rows [][]string, right []bool) {
	if len(rows) == 0 {
		return
	}
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		line.WriteString(indent)
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < len(right) && right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// mib shows a size in MiB with one decimal ("200.0 MiB"), or in KiB below one MiB.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// wall shows a lower bound of wall time, to the second.
func wall(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < 10*time.Second:
		return "≥ " + d.Round(10*time.Millisecond).String()
	}
	return "≥ " + d.Round(time.Second).String()
}

// usdRange shows a cost range such as "$0.41 – $0.97", both ends with the same number of decimals: cents, or
// enough decimals to show the smaller end with three significant digits.
func usdRange(lo, hi float64) string {
	decimals := 2
	if small := min(lo, hi); small > 0 && small < 0.1 {
		decimals = min(8, 2-int(math.Floor(math.Log10(small))))
	}
	return usd(lo, decimals) + " – " + usd(hi, decimals)
}

func usd(v float64, decimals int) string {
	if v == 0 {
		return "$0"
	}
	return "$" + thousandsStr(strconv.FormatFloat(v, 'f', decimals, 64))
}

// thousands writes n with comma separators: 100000 → "100,000".
func thousands(n int) string { return thousandsStr(strconv.Itoa(n)) }

// thousandsStr puts commas into the integer part of a decimal number.
func thousandsStr(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}
