package experiment_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/specfile"
)

// TestSummaryMultipliesOut: the factors the one-line summary prints (validate, the dry run, estimate and the run's
// summary in the Web UI all print it) multiply out to the calls it states, which are the cells the planner plans:
// as many as the passes cover and as many distinct cell ids as there are results.csv rows. For every example and
// for specs drawn at random over orders, pins, wording and prompt variants and verbalized probes.
func TestSummaryMultipliesOut(t *testing.T) {
	check := func(t *testing.T, s *experiment.Spec) {
		t.Helper()
		sum := s.Summary()
		factors, calls, ok := strings.Cut(sum[strings.Index(sum, " · ")+len(" · "):], " = ")
		if !ok {
			t.Fatalf("summary %q has no = N calls", sum)
		}
		product := 1
		for f := range strings.SplitSeq(strings.TrimPrefix(factors, "embed "), " × ") {
			product *= leadingNumber(t, f)
		}
		n := s.NumCells()
		if stated := leadingNumber(t, calls); product != stated || stated != n {
			t.Fatalf("%q: the factors multiply to %d, the line says %d, the planner has %d cells", sum, product, stated, n)
		}
		planned := 0
		for _, p := range s.Passes() {
			planned += p.Len()
		}
		if planned != n {
			t.Errorf("%q: the passes cover %d cells", sum, planned)
		}
		if s.IsEmbed() {
			return
		}
		ids := map[string]bool{}
		for i := range n {
			ids[s.CellID(s.Cell(i))] = true
		}
		if len(ids) != n {
			t.Errorf("%q: %d distinct cell ids (results.csv rows)", sum, len(ids))
		}
	}
	entries, err := os.ReadDir("../examples")
	if err != nil {
		t.Fatal(err)
	}
	examples := 0
	for _, e := range entries {
		path := filepath.Join("../examples", e.Name(), "experiment.yaml")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		s, err := specfile.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		examples++
		t.Run(e.Name(), func(t *testing.T) { check(t, s) })
	}
	if examples < 4 {
		t.Fatalf("%d examples, want every one under examples/", examples)
	}
	for seed := range uint64(300) {
		s := experimenttest.Design(seed, experimenttest.Defaults())
		if err := s.Validate(); err != nil {
			t.Fatalf("design %d is not a valid spec: %v", seed, err)
		}
		check(t, &s)
	}
}

// TestSummaryNamesEveryFactor: the examples' lines, factor by factor.
func TestSummaryNamesEveryFactor(t *testing.T) {
	for path, want := range map[string]string{
		"../examples/bfi/experiment.yaml":     "bfi against humans · 1 model × 2 seeds × 25 items × 12 personas × 2 option orders = 1,200 calls",
		"../examples/wording/experiment.yaml": "wording and order · 1 model × 2 seeds × 2 prompts × 6 items × 2 wordings × 8 personas × 2 option orders = 768 calls",
	} {
		s, err := specfile.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Summary(); got != want {
			t.Errorf("%s:\n got %q\nwant %q", path, got, want)
		}
	}
	// Items asked in different numbers of wordings or orders make one factor, which says what it counts.
	s := experimenttest.Grid(1, 2, 3, 4, experimenttest.Statements(), experimenttest.Defaults(), experimenttest.Edit(func(s *experiment.Spec) {
		s.Questionnaire.Items[0].Order = &experiment.OrderSettings{Mode: experiment.OrderBalanced}
		s.Questionnaire.Items[1].Variants = []experiment.Variant{{ID: "v", Text: "Other words."}}
	}))
	if got, want := s.Summary(), "grid · 1 model × 2 seeds × 5 item forms (3 items, each in its wordings and option orders) × 4 personas = 40 calls"; got != want {
		t.Errorf("uneven items:\n got %q\nwant %q", got, want)
	}
}

// leadingNumber is the number a factor or the total starts with ("1,200 calls" → 1200).
func leadingNumber(t *testing.T, s string) int {
	t.Helper()
	digits, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	n, err := strconv.Atoi(strings.ReplaceAll(digits, ",", ""))
	if err != nil {
		t.Fatalf("factor %q does not start with a number", s)
	}
	return n
}
