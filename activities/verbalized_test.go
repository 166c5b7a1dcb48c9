package activities

import (
	"reflect"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
)

// TestVerbalizedRecord holds the record of a verbalized answer: the stated probabilities normalised with their
// raw sum, the most likely option written, a tie unparsed with its candidates (probabilities kept), and an
// unusable statement unparsed with schema invalid and a message saying why.
func TestVerbalizedRecord(t *testing.T) {
	spec := testSpec("http://localhost", 1, 1)
	spec.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerVerbalized}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	set := spec.OptionsFor(0)
	if len(set.Options) < 2 {
		t.Fatalf("options %v", set.Options)
	}
	a, b := set.Options[0].ID, set.Options[1].ID
	obj := func(pa, pb string) string {
		var parts []string
		for k, o := range set.Options {
			v := "0"
			switch k {
			case 0:
				v = pa
			case 1:
				v = pb
			}
			parts = append(parts, `"`+o.ID+`":`+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	c := spec.Cell(0)
	rec := func(text string) store.Record {
		return answerRecord(&spec, c, respcache.Answer{Text: text, FinishReason: llm.FinishStop}, experiment.Price{}, false)
	}

	r := rec(obj("1", "3"))
	want := make([]float64, len(set.Options))
	want[0], want[1] = 0.25, 0.75
	if r.Status != store.StatusOK || r.OptionID != b || !reflect.DeepEqual(r.Probs, want) || r.ProbsSum != 4 ||
		r.Coverage != 1 || r.Schema != store.SchemaValid {
		t.Errorf("stated 1, 3: %+v; want ok %s, probs %v, sum 4", r, b, want)
	}
	r = rec(obj("0.5", "0.5"))
	if r.Status != store.StatusUnparsed || r.Candidates != a+","+b || r.OptionID != "" || r.Probs == nil || r.ProbsSum != 1 {
		t.Errorf("a tie: %+v; want unparsed with candidates %s,%s and the probabilities kept", r, a, b)
	}
	for _, text := range []string{"I would say " + a, obj("-1", "2"), `{"` + a + `":1}`, obj("0", "0")} {
		r = rec(text)
		if r.Status != store.StatusUnparsed || r.Probs != nil || r.ProbsSum != 0 || r.Schema != store.SchemaInvalid ||
			!strings.HasPrefix(r.ErrorMessage, "verbalized answer unusable: ") || r.Raw != text {
			t.Errorf("%q: %+v; want unparsed, schema invalid, no probabilities, a message", text, r)
		}
	}
}
