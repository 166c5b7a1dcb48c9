package optionprobs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// TestFromStated holds the reading of a verbalized answer: normalised in the set's order with the raw sum kept,
// extra keys ignored, and every unusable statement an error that says why.
func TestFromStated(t *testing.T) {
	set := experiment.OptionSet{Options: []experiment.Option{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	for _, tc := range []struct {
		name, text string
		probs      []float64
		sum        float64
		err        string
	}{
		{"sums to 1", `{"a":0.5,"b":0.25,"c":0.25}`, []float64{0.5, 0.25, 0.25}, 1, ""},
		{"sums to 2", `{"c":1,"b":0.5,"a":0.5}`, []float64{0.25, 0.25, 0.5}, 2, ""},
		{"extra key", `{"a":1,"b":1,"c":2,"d":5}`, []float64{0.25, 0.25, 0.5}, 4, ""},
		{"code fence", "```json\n{\"a\":0,\"b\":0,\"c\":3}\n```", []float64{0, 0, 1}, 3, ""},
		{"zero sum", `{"a":0,"b":0,"c":0}`, nil, 0, "sum to 0"},
		{"negative", `{"a":0.5,"b":-0.1,"c":0.6}`, nil, 0, "option b: probability -0.1 is negative"},
		{"missing", `{"a":1}`, nil, 0, "no probability for option b, c"},
		{"string", `{"a":"0.5","b":0.5,"c":0}`, nil, 0, "option a: \"0.5\" is not a number"},
		{"null", `{"a":null,"b":0.5,"c":0}`, nil, 0, "option a: null is not a number"},
		{"too large", `{"a":1e999,"b":0,"c":0}`, nil, 0, "option a: 1e999 is out of range"},
		// What a tiny model under llama.cpp's grammar for the schema wrote (digits the grammar allows).
		{"grammar overflow", `{"a" :7565633333333333.5555563333333333E3333333333333333,"b" :0.5,"c":0}`, nil, 0, "option a: 7565633333333333.5555563333333333E"},
		{"not JSON", `I think b.`, nil, 0, "not a JSON object"},
		{"array", `[0.2,0.3,0.5]`, nil, 0, "not a JSON object"},
	} {
		d, sum, err := FromStated(tc.text, set)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || d.Probs != nil {
				t.Errorf("%s: %v, %v; want an error with %q", tc.name, d, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(d.Probs, tc.probs) || sum != tc.sum || d.Coverage != 1 {
			t.Errorf("%s: %v sum %g, %v; want %v sum %g", tc.name, d, sum, err, tc.probs, tc.sum)
		}
	}
}
