package design

import (
	"bytes"
	"encoding/csv"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCSVReadsBack writes both files and reads them back: the header, one field per column, and every number
// parsing to exactly the float64 that was written.
func TestCSVReadsBack(t *testing.T) {
	a := analyse(t, readObservations(t, "testdata/observations.csv"), Bootstrap{Samples: 50, Seed: 1})
	bias := a.OrderBias()
	vr, err := a.Variance()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteOrderBias(&b, "run1", bias); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != strings.Join(OrderBiasHeader(), ",") || len(recs) != len(bias)+1 {
		t.Fatalf("order_bias.csv: header %v, %d lines for %d rows", recs[0], len(recs), len(bias))
	}
	col := func(h []string, name string) int {
		for i, c := range h {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	for i, r := range bias {
		rec := recs[i+1]
		for name, want := range map[string]*float64{"weight_diff_lo": r.WeightDiff.Lo, "first_effect": r.FirstEffect.Value,
			"weight_reversed": r.WeightOrder[1], "expected_weight_diff_hi": r.ExpectedWeightDiff.Hi} {
			got := rec[col(recs[0], name)]
			if (want == nil) != (got == "") || (want != nil && got != strconv.FormatFloat(*want, 'g', -1, 64)) {
				t.Errorf("%s/%s %s: %q for %v", r.Model, r.Item, name, got, want)
			}
			if want != nil {
				if v, _ := strconv.ParseFloat(got, 64); v != *want {
					t.Errorf("%s/%s %s: %q reads back as %v, not %v", r.Model, r.Item, name, got, v, *want)
				}
			}
		}
		for k, s := range strings.Split(rec[col(recs[0], "position_shares")], ";") {
			if v, _ := strconv.ParseFloat(s, 64); v != r.PositionShares[k] {
				t.Errorf("%s/%s position %d: %q reads back as %v, not %v", r.Model, r.Item, k+1, s, v, r.PositionShares[k])
			}
		}
	}
	b.Reset()
	if err := WriteVariance(&b, "run1", vr); err != nil {
		t.Fatal(err)
	}
	recs, err = csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != strings.Join(VarianceHeader(), ",") || len(recs) != len(vr)+1 {
		t.Fatalf("variance.csv: header %v, %d lines for %d rows", recs[0], len(recs), len(vr))
	}
	for i, r := range vr {
		rec := recs[i+1]
		if v, _ := strconv.ParseFloat(rec[col(recs[0], "persona_ss")], 64); v != r.Terms[0].SS {
			t.Errorf("%s/%s persona_ss %q reads back as %v, not %v", r.Model, r.Scale, rec[col(recs[0], "persona_ss")], v, r.Terms[0].SS)
		}
		if rec[col(recs[0], "balanced")] != strconv.FormatBool(r.Balanced) {
			t.Errorf("%s/%s balanced %q", r.Model, r.Scale, rec[col(recs[0], "balanced")])
		}
	}
}

// TestReadmeListsTheColumns: README's ## Outputs lists order_bias.csv's header in order and names every term of
// variance.csv.
func TestReadmeListsTheColumns(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	m := regexp.MustCompile("`order_bias.csv` says .*?: `(run_id, [^`]*)`").FindStringSubmatch(s)
	if m == nil {
		t.Fatal("README no longer lists the columns of order_bias.csv")
	}
	if want := strings.Join(OrderBiasHeader(), ", "); m[1] != want {
		t.Errorf("README lists order_bias.csv as\n%s\nOrderBiasHeader() is\n%s", m[1], want)
	}
	if want := "`" + strings.Join(Terms(), ", ") + "`"; !strings.Contains(s, want) {
		t.Errorf("README's variance.csv does not name the terms %s", want)
	}
}
