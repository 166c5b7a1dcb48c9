package results

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
)

// marginalRun is referenceSpec balanced, answered with logprobs, whose cells are of every kind the order-marginal
// distribution must treat alike in every output: ok with probabilities, unparsed with probabilities, ok without
// them, failed.
func marginalRun(t *testing.T) (*experiment.Spec, sliceSource) {
	t.Helper()
	s := referenceSpec(t)
	s.Questionnaire.Order = &experiment.OrderSettings{Mode: experiment.OrderBalanced}
	s.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs}
	var recs []store.Record
	for i := range s.NumCells() {
		c := s.Cell(i)
		opts := s.OptionsFor(c.Item).Options
		shown := s.Shown(c)
		// The answer leans to the option shown first, so the two orders' distributions differ.
		first := shown.Canonical(0)
		p := make([]float64, len(opts))
		for k := range p {
			p[k] = float64(1 + (i+k)%3)
		}
		p[first] += 3
		sum := 0.0
		for _, v := range p {
			sum += v
		}
		for k := range p {
			p[k] /= sum
		}
		r := ok(i, opts[first].ID)
		switch i % 5 {
		case 1:
			r = store.Record{Index: i, Status: store.StatusUnparsed, Raw: "?", Attempts: 1}
			if c.Order == 1 {
				r.Probs = p // unparsed, yet with a distribution: only in the reversed order
			}
		case 3:
			// ok, no probabilities: a point mass at its answer
		case 4:
			if c.Order == 0 {
				r = store.Record{Index: i, Status: store.StatusFailed, ErrorClass: "server", Attempts: 1}
			} else {
				r.Probs = p
			}
		default:
			r.Probs = p
		}
		recs = append(recs, r)
	}
	return s, sliceSource{recs: recs}
}

// TestOrderMarginalIsModelP: order_bias.csv's order-marginal distribution of an item is reference.csv's model_p of
// group all, cell for cell (the same cells counted, the same numbers), whatever cells went unparsed or failed.
func TestOrderMarginalIsModelP(t *testing.T) {
	s, src := marginalRun(t)
	dir := t.TempDir()
	if _, err := Export(context.Background(), src, s, "marginal", dir, 0); err != nil {
		t.Fatal(err)
	}
	type key struct{ model, item string }
	rc, refRows := readTestCSV(t, filepath.Join(dir, ReferenceFile))
	ref := map[key][]string{}
	for _, r := range refRows {
		if r[rc["group"]] == experiment.GroupAll {
			ref[key{r[rc["model"]], r[rc["item_id"]]}] = r
		}
	}
	oc, orderRows := readTestCSV(t, filepath.Join(dir, OrderBiasFile))
	n := 0
	for _, r := range orderRows {
		want, okRef := ref[key{r[oc["model"]], r[oc["item_id"]]}]
		if !okRef {
			continue // the all line, or an item without a reference
		}
		n++
		got := []string{r[oc["marginal_p"]], r[oc["marginal_cells"]], r[oc["marginal_source"]]}
		if w := []string{want[rc["model_p"]], want[rc["n_cells"]], want[rc["source"]]}; !slices.Equal(got, w) {
			t.Errorf("%s/%s: order_bias.csv's marginal_p, marginal_cells, marginal_source %q; reference.csv's model_p, n_cells, source %q",
				r[oc["model"]], r[oc["item_id"]], got, w)
		}
	}
	if n == 0 {
		t.Fatal("no item line of order_bias.csv has a reference line to compare")
	}
}
