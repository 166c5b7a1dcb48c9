package report

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/design"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// orderRun is the quickstart, with a second model, with every item balanced, each cell answering the option shown first one time in
// three and otherwise an option drawn from its index.
func orderRun(t *testing.T) (*experiment.Spec, sliceSource) {
	t.Helper()
	spec, err := specfile.Load(quickstartSpec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Questionnaire.Order = &experiment.OrderSettings{Mode: experiment.OrderBalanced}
	second := spec.Models[0]
	second.ID, second.Name = "second", "second-model"
	spec.Models = append(spec.Models, second)
	recs := make(sliceSource, spec.NumCells())
	for i := range recs {
		c := spec.Cell(i)
		opt := strconv.Itoa((i*7+i/13)%5 + 1)
		if i%3 == 0 {
			opt = spec.Shown(c).CanonicalIDs()[0]
		}
		recs[i] = store.Record{Index: i, Status: store.StatusOK, OptionID: opt, Raw: opt, FinishReason: "stop", Attempts: 1}
	}
	return spec, recs
}

// TestReportOrderMatchesCSV: a run that varied option order gets an Option order section whose every number
// (the all line of each model and the folded item lines) is order_bias.csv's; a run that did not has none.
func TestReportOrderMatchesCSV(t *testing.T) {
	spec, src := orderRun(t)
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := results.Export(ctx, src, spec, "order-run", dir, 0); err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(ctx, src, spec, "order-run", 0)
	if err != nil {
		t.Fatal(err)
	}
	path, err := WriteFile(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.Contains(page, `id="order"`) {
		t.Fatal("no Option order section in the report of a balanced run")
	}
	kv := keyedValues(t, page)
	col, rows := readCSV(t, filepath.Join(dir, results.OrderBiasFile))
	if len(rows) < 2 {
		t.Fatalf("%s has %d lines", results.OrderBiasFile, len(rows))
	}
	sawAll := false
	for _, r := range rows {
		key := "order/" + r[col["model"]] + "/" + r[col["item_id"]]
		sawAll = sawAll || r[col["item_id"]] == design.AllItems
		if got := kv[key+"/n"]; got != r[col["n"]] {
			t.Errorf("%s/n: report %q, csv %q", key, got, r[col["n"]])
		}
		for _, c := range []string{"weight_as_written", "weight_reversed", "weight_shuffled"} {
			if got := kv[key+"/"+c]; !sameStat(got, r[col[c]]) {
				t.Errorf("%s/%s: report %q, csv %q", key, c, got, r[col[c]])
			}
		}
		for _, c := range []string{"weight_diff", "primacy_recency", "first_effect"} {
			got := kv[key+"/"+c]
			v, rest, _ := strings.Cut(got, " [")
			lo, hi, _ := strings.Cut(strings.TrimSuffix(rest, "]"), ", ")
			if !sameStat(v, r[col[c]]) || !sameStat(lo, r[col[c+"_lo"]]) || !sameStat(hi, r[col[c+"_hi"]]) {
				t.Errorf("%s/%s: report %q, csv %s [%s, %s]", key, c, got, r[col[c]], r[col[c+"_lo"]], r[col[c+"_hi"]])
			}
		}
		var shares []string
		for i, s := range strings.Split(r[col["position_shares"]], ";") {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s position_shares %q: %v", key, s, err)
			}
			shares = append(shares, strconv.Itoa(i+1)+": "+strconv.FormatFloat(100*v, 'f', 1, 64)+"%")
		}
		if want := strings.Join(shares, " · "); kv[key+"/position_shares"] != want {
			t.Errorf("%s/position_shares: report %q, want %q", key, kv[key+"/position_shares"], want)
		}
	}
	if !sawAll {
		t.Errorf("%s has no %s line", results.OrderBiasFile, design.AllItems)
	}

	_, page = render(t)
	if strings.Contains(page, `id="order"`) {
		t.Error("the report of a run with the options as written has an Option order section")
	}
}
