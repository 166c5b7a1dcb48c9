package report

import (
	"bytes"
	"context"
	"hash/fnv"
	"html"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// bfiRun is examples/bfi's spec (25 items, twelve personas in groups by gender and age_band, bfi's 2,800
// humans) with made-up records: each cell's option probabilities peak at an option drawn from a hash of the
// cell's persona, item and seed, so the personas' item scores hardly agree and some scale's α comes out
// negative, as a real model's can.
func bfiRun(t *testing.T) (*experiment.Spec, sliceSource) {
	t.Helper()
	spec, err := specfile.Load("../examples/bfi/experiment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// 50 resamples, not the default 1,000: the tests hold the page to the CSVs of the same analysis, which any
	// number of resamples gives, and 1,000 cost minutes under the race detector.
	samples := 50
	spec.Analysis.Bootstrap.Samples = &samples
	recs := make(sliceSource, spec.NumCells())
	for i := range recs {
		c := spec.Cell(i)
		h := fnv.New32a()
		_, _ = h.Write([]byte(strconv.Itoa(c.Persona) + "/" + strconv.Itoa(c.Item) + "/" + strconv.Itoa(c.Seed)))
		k := len(spec.OptionsFor(c.Item).Options)
		peak := int(h.Sum32() % uint32(k))
		p := make([]float64, k)
		var sum float64
		for o := range p {
			p[o] = math.Exp(-math.Abs(float64(o - peak)))
			sum += p[o]
		}
		for o := range p {
			p[o] /= sum
		}
		opt := spec.OptionsFor(c.Item).Options[peak].ID
		recs[i] = store.Record{Index: i, Status: store.StatusOK, OptionID: opt, Raw: opt, FinishReason: "stop", Probs: p,
			Coverage: 0.95, Attempts: 1, LatencyMS: float64(20 + i%13)}
	}
	return spec, recs
}

// TestReportEveryGroup: the bfi-like report has a table for every reference group, headed by the group in words
// with its personas and respondents, whose every figure is reference.csv's and reference_scales.csv's line of
// that group; a model α below zero is marked with the sentence on ω, and an empty figure shows psych's reason.
func TestReportEveryGroup(t *testing.T) {
	spec, recs := bfiRun(t)
	dir, page := renderRun(t, spec, recs)
	kv := keyedValues(t, page)
	pc := &pageCheck{t: t, kv: kv, source: "want"}
	expect, equal := pc.expect, sameText

	groups := spec.Reference.GroupLabels()
	if len(groups) != 7 {
		t.Fatalf("bfi has %d groups, want 7 (all, gender 1 and 2, four age bands)", len(groups))
	}
	bars := indexPMF(page)
	col, rows := readCSV(t, filepath.Join(dir, results.ReferenceFile))
	resp := map[string][2]int{}  // group → fewest, most respondents of an item
	w1 := map[string][]float64{} // group → its items' W1
	for _, r := range rows {
		g := r[col["group"]]
		key := "dist/" + r[col["model"]] + "/" + g + "/" + r[col["item_id"]]
		for stat, column := range map[string]string{"w1": "w1", "jsd": "jsd", "model_entropy": "model_entropy", "human_entropy": "human_entropy",
			"alignment": "alignment", "simbench": "simbench", "model_mean": "model_mean", "human_mean": "human_mean",
			"w1_uniform": "uniform_w1", "w1_split": "split_half_w1", "alignment_uniform": "uniform_alignment",
			"alignment_split": "split_half_alignment", "w1_perfect": "perfect_w1", "alignment_perfect": "perfect_alignment",
			"simbench_perfect": "perfect_simbench", "jsd_perfect": "perfect_jsd"} {
			expect(key+"/"+stat, r[col[column]], sameStat)
		}
		for _, stat := range []string{"w1", "alignment", "jsd", "simbench", "model_mean", "human_mean"} {
			pc.expectCI(key+"/"+stat, r[col[stat+"_lo"]], r[col[stat+"_hi"]])
		}
		for _, stat := range []string{"w1", "alignment", "jsd", "simbench"} {
			pc.expectCI(key+"/"+stat+"_perfect", r[col["perfect_"+stat+"_lo"]], r[col["perfect_"+stat+"_hi"]])
		}
		expect(key+"/n_humans", thousandsOf(t, r[col["n_humans"]]), equal)
		expect(key+"/n_cells", r[col["n_cells"]], equal)
		m, h := bars.bars(t, strings.TrimPrefix(key, "dist/"))
		if want := parseFloats(t, r[col["model_p"]]); !near(m, want...) {
			t.Errorf("%s model bars %v, reference.csv %v", key, m, want)
		}
		if want := parseFloats(t, r[col["human_p"]]); !near(h, want...) {
			t.Errorf("%s human bars %v, reference.csv %v", key, h, want)
		}
		if v, err := strconv.ParseFloat(r[col["w1"]], 64); err == nil {
			w1[g] = append(w1[g], v)
		}
		n, _ := strconv.Atoi(r[col["n_humans"]])
		lh, seen := resp[g]
		if !seen || n < lh[0] {
			lh[0] = n
		}
		lh[1] = max(lh[1], n)
		resp[g] = lh
	}
	if len(rows) != 25*7 {
		t.Errorf("reference.csv has %d lines, want 25 items × 7 groups", len(rows))
	}

	// Each group's heading names it in words, with its personas and the range of respondents per item.
	headings := regexp.MustCompile(`<h3 id="grp-0-(\d+)" class="group">([^<]*)</h3>`).FindAllStringSubmatch(page, -1)
	want := []string{"everyone", "gender = 1", "gender = 2", "age_band = 0-17", "age_band = 18-29", "age_band = 30-44", "age_band = 45+"}
	if len(headings) != len(want) {
		t.Fatalf("%d group headings, want %d", len(headings), len(want))
	}
	for i, g := range groups {
		if h := html.UnescapeString(headings[i][2]); h != want[i] {
			t.Errorf("group %s is headed %q, want %q", g, h, want[i])
		}
		personas := 0
		for p := range spec.Personas {
			if spec.InGroup(p, g) {
				personas++
			}
		}
		expect("group/sim/"+g+"/n_personas", strconv.Itoa(personas), equal)
		lh := resp[g]
		n := thousands(lh[0]) + "–" + thousands(lh[1])
		if lh[0] == lh[1] {
			n = thousands(lh[0])
		}
		expect("group/sim/"+g+"/n_humans", n, equal)
		var sum float64
		for _, v := range w1[g] {
			sum += v
		}
		expect("group/sim/"+g+"/mean_w1", strconv.FormatFloat(sum/float64(len(w1[g])), 'g', -1, 64), sameStat)
	}

	col, rows = readCSV(t, filepath.Join(dir, results.ReferenceScalesFile))
	plain := html.UnescapeString(page)
	negative, noted, overall := 0, 0, 0
	for _, r := range rows {
		key := "refscale/" + r[col["model"]] + "/" + r[col["group"]] + "/" + r[col["scale"]]
		// Every line, the scales' and the one over every item, has the means of its items' figures.
		for stat, column := range map[string]string{"mean_alignment": "alignment", "mean_alignment_uniform": "uniform_alignment",
			"mean_alignment_split": "split_half_alignment", "mean_w1": "w1", "mean_w1_uniform": "uniform_w1",
			"mean_w1_split": "split_half_w1", "mean_simbench": "simbench", "mean_alignment_perfect": "perfect_alignment",
			"mean_w1_perfect": "perfect_w1", "mean_simbench_perfect": "perfect_simbench"} {
			expect(key+"/"+stat, r[col[column]], sameStat)
		}
		for stat, column := range map[string]string{"mean_alignment": "alignment", "mean_w1": "w1", "mean_simbench": "simbench",
			"mean_alignment_perfect": "perfect_alignment", "mean_w1_perfect": "perfect_w1", "mean_simbench_perfect": "perfect_simbench"} {
			pc.expectCI(key+"/"+stat, r[col[column+"_lo"]], r[col[column+"_hi"]])
		}
		expect(key+"/items_compared", r[col["n_items_compared"]], equal)
		expect(key+"/n_personas", r[col["n_personas"]], equal)
		if r[col["scale"]] == results.ScaleOverall {
			// The line over every item carries no α or ω (they are per scale), nor the humans' scale count.
			overall++
			for _, stat := range []string{"model_alpha", "human_alpha", "model_omega", "human_omega"} {
				if _, ok := kv[key+"/"+stat]; ok {
					t.Errorf("%s shows %s, which is per scale", key, stat)
				}
			}
			continue
		}
		for stat, column := range map[string]string{"model_alpha": "model_alpha", "human_alpha": "human_alpha",
			"model_omega": "model_omega_total", "human_omega": "human_omega_total"} {
			expect(key+"/"+stat, r[col[column]], sameStat)
			pc.expectCI(key+"/"+stat, r[col[column+"_lo"]], r[col[column+"_hi"]])
		}
		expect(key+"/n_humans", thousandsOf(t, r[col["n_humans"]]), equal)
		// The row's markup up to the next scale row: its note, when it has one, is in the row beneath.
		mark := `data-key="` + key + `/model_alpha"`
		i := strings.Index(plain, mark)
		if i < 0 {
			continue
		}
		row := plain[i+len(mark):]
		if j := strings.Index(row, `/model_alpha"`); j > 0 {
			row = row[:j]
		}
		if j := strings.Index(row, "</table>"); j > 0 {
			row = row[:j]
		}
		if a, err := strconv.ParseFloat(r[col["model_alpha"]], 64); err == nil && a < 0 {
			negative++
			if !strings.Contains(row, `class="nc"`) || !strings.Contains(row, "ω total reverses the items that load negatively") {
				t.Errorf("%s: the model's α is %g but its ω is not marked as not comparable", key, a)
			}
		} else if strings.Contains(row, `class="nc"`) {
			t.Errorf("%s: α %q is not negative, yet ω is marked as not comparable", key, r[col["model_alpha"]])
		}
		if note := r[col["note"]]; note != "" {
			noted++
			_, reason, _ := strings.Cut(note, ": ")
			if !strings.Contains(row, reason) {
				t.Errorf("%s: the empty figure's reason %q is not shown", key, reason)
			}
		}
	}
	if len(rows)-overall != 5*7 || overall != 7 || negative == 0 || noted == 0 {
		t.Errorf("%d scale lines, %d over every item, %d with a negative model α, %d with a note: want 35, 7 and some of each",
			len(rows)-overall, overall, negative, noted)
	}
	validity := checkValidityLines(t, pc, dir)
	uniqueKeys(t, page, "dist/", "refscale/", "validity/", "group/")
	// Per item and group 14 numbers and up to 6 intervals, per group three; per scale and group 9 means and
	// counts, 4 reliabilities and up to 4 intervals, and 9 per line over every item; per validity line its
	// figures, two counts and the note.
	if lo := 25*7*14 + 7*3 + 35*(9+4) + 7*9 + 4*validity; pc.checked < lo {
		t.Errorf("only %d numbers checked, want at least %d", pc.checked, lo)
	}
	// The names of the counts say what they count.
	for _, s := range []string{"respondents who answered this item", "respondents with a score on this scale", "model entropy", "human entropy", "lower is closer"} {
		if strings.Count(page, s) < len(groups) {
			t.Errorf("%q appears fewer than once per group", s)
		}
	}
	// The analysis' baselines, floors and intervals show in every group's table, and the legend says what the
	// split halves and the perfect model are.
	for _, s := range []string{"<th>baseline (uniform)</th>", "<th>humans vs humans (split halves)</th>", "<th>perfect model (floor)</th>",
		`class="ci"`, "95 % bootstrap interval", "SimBench", "alignment", "a human–human baseline, not a bound",
		"as close to the humans as sampling its number of answers allows"} {
		if strings.Count(page, s) < len(groups) {
			t.Errorf("%q appears fewer than once per group", s)
		}
	}
}

// thousandsOf writes a CSV count as the report does, with thousands separators.
func thousandsOf(t *testing.T, s string) string {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("count %q: %v", s, err)
	}
	return thousands(n)
}

// TestReportComingColumns: the view has room for the figures the analysis is to carry — the uniform answer's and
// the humans' split halves as baselines and the perfect model as a floor beside a distance, an interval under a
// figure, a validity table — and the page shows each exactly when the view has it (the analysis here has none,
// see TestReportEveryGroup).
func TestReportComingColumns(t *testing.T) {
	r, err := Analyze(context.Background(), distRecords(), distSpec(t), "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	v := build(r)
	// Clear what the analysis fills, so only the figures set below show.
	for d := range v.Dists {
		for gi := range v.Dists[d].Groups {
			gg := &v.Dists[d].Groups[gi]
			for c := range gg.Cols {
				gg.Cols[c].Baseline, gg.Cols[c].Split, gg.Cols[c].Perfect = false, false, false
			}
			gg.ScaleCols = nil
			for i := range gg.Scales {
				sc := &gg.Scales[i]
				sc.Vals = nil
				for _, f := range []*figure{&sc.ModelAlpha, &sc.HumanAlpha, &sc.ModelOmega, &sc.HumanOmega} {
					f.Lo, f.Hi, f.W = nil, nil, nil
				}
			}
			for i := range gg.Rows {
				for k := range gg.Rows[i].Vals {
					x := &gg.Rows[i].Vals[k]
					x.Uniform, x.Split, x.Perfect, x.Model.Lo, x.Model.Hi, x.Model.W = figure{}, figure{}, figure{}, nil, nil, nil
				}
			}
		}
	}
	g := &v.Dists[0].Groups[0]
	g.Cols[1].Baseline, g.Cols[1].Split, g.Cols[1].Perfect = true, true, true // W1
	num := func(f float64) *float64 { return &f }
	for i := range g.Rows {
		w1 := &g.Rows[i].Vals[1]
		w1.Uniform.V, w1.Split.V = num(1.25+float64(i)), num(0.0625)
		w1.Perfect = figure{V: num(0.5), Lo: num(0.25), Hi: num(1)}
		w1.Model.Lo, w1.Model.Hi = num(0.125), num(0.875)
	}
	v.Validity = []validityTable{{Model: "m1", Open: true, Sections: []validitySection{{
		validityCheck: validityChecks[len(validityChecks)-1],
		Rows:          []validityRow{{Key: "m1/congruence/E/all//", Scale: "E", Value: figure{V: num(0.5), Lo: num(0.25), Hi: num(0.75)}}}}}}}
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	kv := keyedValues(t, out)
	for key, want := range map[string]string{
		"dist/m1/all/q1/w1_uniform": "1.250", "dist/m1/all/q2/w1_uniform": "2.250", "dist/m1/all/q1/w1_split": "0.062",
		"dist/m1/all/q1/w1_perfect": "0.500", "dist/m1/all/q1/w1_perfect_ci": "[0.250, 1.000]",
		"dist/m1/all/q1/w1_ci": "[0.125, 0.875]", "validity/m1/congruence/E/all///value": "0.500",
		"validity/m1/congruence/E/all///value_ci": "[0.250, 0.750]",
	} {
		if kv[key] != want {
			t.Errorf("%s: %q, want %q", key, kv[key], want)
		}
	}
	// Only the table that has them shows the columns: m1's everyone, not m2's.
	for s, n := range map[string]int{"<th>baseline (uniform)</th>": 1, "<th>humans vs humans (split halves)</th>": 1,
		"<th>perfect model (floor)</th>": 1, "<b>Baseline (uniform)</b>": 1, "<b>Perfect model (floor)</b>": 1,
		"95 % bootstrap interval": 2, `id="validity"`: 1, `data-key="dist/m2/all/q1/w1_uniform"`: 0, `class="ci"`: 5} {
		if c := strings.Count(out, s); c != n {
			t.Errorf("%q appears %d times, want %d", s, c, n)
		}
	}
	if _, ok := kv["dist/m1/all/q1/jsd_uniform"]; ok {
		t.Error("JSD shows a baseline column it does not have")
	}
}

// expectCI checks the interval the page shows under key's figure (key_ci, "[lo, hi]") against the CSV's bounds,
// and that the page shows none where the CSV has none.
func (c *pageCheck) expectCI(key, lo, hi string) {
	c.t.Helper()
	if lo == "" || hi == "" {
		if shown, ok := c.kv[key+"_ci"]; ok {
			c.t.Errorf("%s_ci: report shows %q where the CSV has no interval", key, shown)
		}
		return
	}
	c.expect(key+"_ci", lo+";"+hi, sameCI)
}

// sameCI is expect's comparison of a shown interval "[lo, hi]" with the CSV's bounds "lo;hi".
func sameCI(shown, want string) bool {
	inner, ok1 := strings.CutPrefix(shown, "[")
	inner, ok2 := strings.CutSuffix(inner, "]")
	a, b, ok3 := strings.Cut(inner, ", ")
	lo, hi, _ := strings.Cut(want, ";")
	return ok1 && ok2 && ok3 && sameStat(a, lo) && sameStat(b, hi)
}

// checkValidityLines holds the page's validity section to dir's validity.csv: every line's figures with their
// intervals and the signs' agreement, no figure the file has not, and a sentence for every statistic. It
// returns the number of lines.
func checkValidityLines(t *testing.T, pc *pageCheck, dir string) int {
	t.Helper()
	col, rows := readCSV(t, filepath.Join(dir, results.ValidityFile))
	if len(rows) == 0 {
		t.Fatal("validity.csv has no lines")
	}
	want := map[string]bool{}
	stats := map[string]bool{}
	for _, r := range rows {
		stat := r[col["statistic"]]
		stats[stat] = true
		key := "validity/" + strings.Join([]string{r[col["model"]], stat, r[col["scale"]], r[col["attribute"]], r[col["level"]], r[col["item_id"]]}, "/")
		shown := map[string]bool{}
		if stat != results.ValidityCongruence {
			shown["model"], shown["human"] = true, true
		}
		if stat == results.ValiditySDRatio || stat == results.ValidityCongruence {
			shown["value"] = true
		}
		for _, side := range []string{"model", "human", "value"} {
			value := side + "_value"
			if side == "value" {
				value = "value"
			}
			if !shown[side] {
				// The page has no column for it: the file must have no figure there either.
				if r[col[value]] != "" || r[col[side+"_lo"]] != "" {
					t.Errorf("%s: validity.csv has %s %q the page has no column for", key, value, r[col[value]])
				}
				continue
			}
			pc.expect(key+"/"+side, r[col[value]], sameStat)
			pc.expectCI(key+"/"+side, r[col[side+"_lo"]], r[col[side+"_hi"]])
			want[key+"/"+side] = true
			if r[col[side+"_lo"]] != "" {
				want[key+"/"+side+"_ci"] = true
			}
		}
		if stat == results.ValidityDifference {
			agree := map[string]string{"true": "yes", "false": "no", "": "—"}[r[col["agree"]]]
			pc.expect(key+"/agree", agree, sameText)
			want[key+"/agree"] = true
		} else if r[col["agree"]] != "" {
			t.Errorf("%s: validity.csv has agree %q the page has no column for", key, r[col["agree"]])
		}
		pc.expect(key+"/n_personas", r[col["n_personas"]], sameText)
		pc.expect(key+"/n_humans", thousandsOf(t, r[col["n_humans"]]), sameText)
		pc.expect(key+"/note", r[col["note"]], sameText)
		want[key+"/n_personas"], want[key+"/n_humans"], want[key+"/note"] = true, true, true
	}
	for key := range pc.kv {
		if strings.HasPrefix(key, "validity/") && !want[key] {
			t.Errorf("the page shows %s, which validity.csv has not", key)
		}
	}
	for stat := range stats {
		if pc.kv["validity-what/"+stat] == "" {
			t.Errorf("the validity section does not say what %s is", stat)
		}
	}
	if len(stats) != 6 {
		t.Errorf("validity.csv has %d statistics, want 6", len(stats))
	}
	return len(rows)
}

// uniqueKeys fails on a data-key with one of prefixes that the page has more than once: keyedValues keeps the
// last, so a figure shown under another's key would go unseen.
func uniqueKeys(t *testing.T, page string, prefixes ...string) {
	t.Helper()
	seen := map[string]int{}
	for _, m := range regexp.MustCompile(`data-key="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		key := html.UnescapeString(m[1])
		for _, p := range prefixes {
			if strings.HasPrefix(key, p) {
				seen[key]++
			}
		}
	}
	for key, n := range seen {
		if n > 1 {
			t.Errorf("data-key %s appears %d times", key, n)
		}
	}
	if len(seen) == 0 {
		t.Errorf("no data-key with prefixes %v", prefixes)
	}
}
