package results

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
	"github.com/silicolab/silico/store"
)

// A cell's option probabilities come out as p_<option id> columns in results.csv and a "probs" object in
// results.jsonl, with the statistics derived from them: the entropy, the most likely option and whether it is the
// written one, and the expected score Σ p·score with a reverse-keyed item reversed.
func TestRowsCarryTheOptionProbabilities(t *testing.T) {
	spec := testSpec()
	spec.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs}
	idx := -1
	for i := range spec.NumCells() {
		if c := spec.Cell(i); c.Item == 1 && c.Model == 0 { // q2, reverse-keyed
			idx = i
			break
		}
	}
	rec := ok(idx, "1")
	rec.Probs, rec.Coverage, rec.FinishReason = []float64{0.25, 0.25, 0.5}, 0.8, "stop"
	row := BuildRow(spec, "run", rec)
	// Reversed, option weights 1, 2, 3 score 3, 2, 1.
	if row.ExpectedScore == nil || math.Abs(*row.ExpectedScore-(0.25*3+0.25*2+0.5*1)) > 1e-12 {
		t.Errorf("expected score %v, want 1.75", row.ExpectedScore)
	}
	if row.Entropy == nil || math.Abs(*row.Entropy-1.5) > 1e-12 {
		t.Errorf("entropy %v, want 1.5 bits", row.Entropy)
	}
	if row.TopOption != "3" || row.TopAgrees == nil || *row.TopAgrees {
		t.Errorf("top option %q agrees %v; want 3, false (the written answer is 1)", row.TopOption, row.TopAgrees)
	}
	if *row.Coverage != 0.8 || row.FinishReason != "stop" {
		t.Errorf("coverage %v, finish reason %q", *row.Coverage, row.FinishReason)
	}
	header := HeaderFor(spec)
	if want := []string{"p_1", "p_2", "p_3", "p_y", "p_n", "p_dk"}; !slices.Equal(header[len(Header()):], want) {
		t.Fatalf("probability columns %v, want %v", header[len(Header()):], want)
	}
	vals := row.ValuesFor(header[len(Header()):])
	if got := vals[len(Header()):]; !slices.Equal(got, []string{"0.25", "0.25", "0.5", "", "", ""}) {
		t.Errorf("p_ columns %q", got)
	}
	// A row without a distribution leaves them empty; a spec without logprobs has none.
	plain := BuildRow(spec, "run", ok(idx, "1"))
	if plain.Entropy != nil || plain.TopOption != "" || plain.TopAgrees != nil || slices.ContainsFunc(plain.ValuesFor(header[len(Header()):])[len(Header()):], func(s string) bool { return s != "" }) {
		t.Errorf("a row without probabilities: %+v", plain)
	}
	if n := len(HeaderFor(testSpec())); n != len(Header()) {
		t.Errorf("a spec without logprobs has %d columns, want %d", n, len(Header()))
	}

	// results.jsonl keeps the object in option order and reads back exactly.
	b, err := row.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"probs":{"1":0.25,"2":0.25,"3":0.5}`)) {
		t.Errorf("JSON has no probs object in option order: %s", b)
	}
	var back []Row
	if err := ReadJSONL(bytes.NewReader(b), func(r Row) error { back = append(back, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(back) != 1 || !slices.Equal(back[0].Probs, row.Probs) || !slices.Equal(back[0].Options, []string{"1", "2", "3"}) {
		t.Errorf("read back %+v", back)
	}
	if !slices.Equal(CellColumns(back[0]), CellColumns(row)) {
		t.Errorf("cell columns differ after a JSON round trip:\n%q\n%q", CellColumns(back[0]), CellColumns(row))
	}
}

// reliability.csv's expected-score variants are alpha and omega of the personas × items matrix of expected
// scores, computed by the same code as the written answers' (held to R psych in package psychometrics); scales.csv
// has each persona's mean expected score.
func TestReliabilityOnExpectedScores(t *testing.T) {
	spec := &experiment.Spec{Name: "e", Seeds: []int64{1}, Models: []experiment.Model{{ID: "m", Name: "m"}},
		Run: experiment.RunSettings{Answer: &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs}}}
	for w := 1; w <= 3; w++ {
		spec.Questionnaire.Options.Options = append(spec.Questionnaire.Options.Options, experiment.Option{ID: strconv.Itoa(w), Text: strconv.Itoa(w), Weight: w})
	}
	for i := range 3 {
		spec.Questionnaire.Items = append(spec.Questionnaire.Items, experiment.Item{ID: fmt.Sprint("i", i), Text: "t", Scale: "S", Reversed: i == 2})
	}
	for p := range 7 {
		spec.Personas = append(spec.Personas, experiment.Persona{ID: fmt.Sprint("p", p)})
	}
	var recs []store.Record
	x := make([][]float64, 7)
	for i := range spec.NumCells() {
		c := spec.Cell(i)
		// A distribution that moves with the persona, and differently per item, so the items correlate.
		a := float64((c.Persona*(c.Item+2))%7+1) / 10
		probs := []float64{a * 0.5, 0.5, 0.5 - a*0.5}
		recs = append(recs, store.Record{Index: i, Status: store.StatusOK, OptionID: "2", Probs: probs, Coverage: 1})
		w := []float64{1, 2, 3}
		if c.Item == 2 {
			w = []float64{3, 2, 1}
		}
		if x[c.Persona] == nil {
			x[c.Persona] = make([]float64, 3)
		}
		x[c.Persona][c.Item] = probs[0]*w[0] + probs[1]*w[1] + probs[2]*w[2]
	}
	an, err := Analyze(context.Background(), sliceSource{recs: recs}, spec, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	al, err := psychometrics.ComputeAlpha(x)
	if err != nil {
		t.Fatal(err)
	}
	om, err := psychometrics.OmegaTotal(x, al.Items)
	if err != nil {
		t.Fatal(err)
	}
	rel := an.Reliability[0]
	if rel.AlphaExpected == nil || math.Abs(*rel.AlphaExpected-al.Raw) > 1e-12 || rel.OmegaExpected == nil || math.Abs(*rel.OmegaExpected-om) > 1e-12 {
		t.Errorf("alpha, omega on expected scores = %v, %v; want %v, %v", rel.AlphaExpected, rel.OmegaExpected, al.Raw, om)
	}
	// The written answers (all "2") have no variance: their alpha is undefined, the expected scores' is not.
	if rel.Alpha != nil {
		t.Errorf("alpha of constant answers = %v, want none", *rel.Alpha)
	}
	if sc := an.Scales[0]; sc.ExpectedMean == nil || sc.NExpected != 3 || math.Abs(*sc.ExpectedMean-(x[0][0]+x[0][1]+x[0][2])/3) > 1e-6 {
		t.Errorf("scale score %+v, want the mean of %v", sc, x[0])
	}
}
