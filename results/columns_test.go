package results

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/silicolab/silico/usage"
)

// encodingJSON is what encoding/json's Encoder with SetEscapeHTML(false) writes for v, the form results.jsonl
// has always had.
func encodingJSON(t testing.TB, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

var trickyStrings = []string{
	"", "plain", `say "hi"`, `back\slash`, "<b>&amp;</b>", "line\nbreak\r\n", "tab\there", "\b\f\x00\x01\x1f\x7f",
	"é ü ñ 日本語 🙂", "\u2028 and \u2029", "bad \xff utf-8 \xc3", "\xe2\x80", "\xed\xa0\x80 surrogate",
}

// TestAppendJSONStringIsEncodingJSONs: the strings of a results.jsonl line are written byte for byte as
// encoding/json wrote them before the columns had a table of their own.
func TestAppendJSONStringIsEncodingJSONs(t *testing.T) {
	for _, s := range trickyStrings {
		if got, want := string(appendJSONString(nil, s)), encodingJSON(t, s); got != want {
			t.Errorf("appendJSONString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendJSONString(nil, s)), encodingJSON(t, s); got != want {
			t.Errorf("appendJSONString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	})
}

// TestAppendJSONFloatIsEncodingJSONs: coverage, entropy and expected_score are written as encoding/json writes a
// float64, exponent forms included, and NaN is refused as it is there.
func TestAppendJSONFloatIsEncodingJSONs(t *testing.T) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21,
		123456789012345678901234.0, 5e-324, math.MaxFloat64, -2.5e-8, 0.8940683064471943} {
		got, err := appendJSONFloat(nil, v)
		if want := encodingJSON(t, v); err != nil || string(got) != want {
			t.Errorf("appendJSONFloat(%v) = %s, %v; encoding/json writes %s", v, got, err, want)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if b, err := appendJSONFloat(nil, v); err == nil {
			t.Errorf("appendJSONFloat(%v) = %s, want an error", v, b)
		}
	}
}

// fullRow is a row with every column set, its text columns to tricky strings.
func fullRow() Row {
	score, cov, h, es, agrees := 4, 0.75, 1.25e-7, 3.5, true
	return Row{RunID: "run <1>", Index: 7, CellID: "m/1/i/p", Model: "m", Seed: -3, ItemID: "i", ItemText: `a "quoted" <item>`,
		Scale: "E", Reversed: true, PersonaID: "p\u2028", Status: "ok", OptionID: "2", OptionText: "2. Yes & no", Score: &score,
		Raw: "2.\n\tYes \xff", ErrorClass: "c", ErrorCode: "e", ErrorMessage: "m\\", PromptTokens: 12, CompletionTokens: 3,
		CostUSD: usage.Dollars(0.0000125), LatencyMS: 12.345, Attempts: 4, Tries: 3, Cached: true, ImageSHA256: "ab,cd",
		FinishReason: "stop", Schema: "valid", Probs: []float64{0.25, 0.75}, Options: []string{"1", "<2>"},
		Coverage: &cov, Entropy: &h, TopOption: "2", ExpectedScore: &es, TopAgrees: &agrees}
}

// TestRowJSONKeysAndRoundTrip: a results.jsonl line has the columns' keys in table order, is valid JSON, and
// reads back into the same row (invalid UTF-8 aside, which JSON cannot carry).
func TestRowJSONKeysAndRoundTrip(t *testing.T) {
	r := fullRow()
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("invalid JSON: %s", b)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for _, c := range rowColumns {
		want = append(want, c.name)
	}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	var back Row
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	r.Raw = strings.ToValidUTF8(r.Raw, "\uFFFD")
	// cost_usd and latency_ms are written with the CSV's fixed decimals.
	r.LatencyMS = 12.3
	if !reflect.DeepEqual(back, r) {
		t.Errorf("read back %+v\nwant      %+v", back, r)
	}
}

// TestRowJSONRefusesNaN: a row with a NaN or an infinity in any float column is an error naming the column, not
// a line that no JSON reader takes (as encoding/json refused it).
func TestRowJSONRefusesNaN(t *testing.T) {
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for col, set := range map[string]func(*Row){
			"entropy":    func(r *Row) { r.Entropy = &bad },
			"latency_ms": func(r *Row) { r.LatencyMS = bad },
			"probs":      func(r *Row) { r.Probs[0] = bad },
		} {
			r := fullRow()
			set(&r)
			if b, err := r.MarshalJSON(); err == nil || !strings.Contains(err.Error(), col) {
				t.Errorf("MarshalJSON with %s %v = %s, %v; want an error naming %s", col, bad, b, err, col)
			}
		}
	}
}

// TestColumnsAreOneTable: Header, Values and CellColumns follow rowColumns: the same names in the same order,
// the run columns left out of CellColumns and the probabilities last in it.
func TestColumnsAreOneTable(t *testing.T) {
	r := fullRow()
	h, v, cells := Header(), r.Values(), CellColumns(r)
	if len(h) != len(v) {
		t.Fatalf("%d header columns, %d values", len(h), len(v))
	}
	var names, run []string
	for _, c := range rowColumns {
		if c.csv != nil {
			names = append(names, c.name)
		}
		if c.run {
			run = append(run, c.name)
		}
	}
	if !slices.Equal(h, names) {
		t.Errorf("Header() = %v, want %v", h, names)
	}
	if want := []string{"run_id", "latency_ms", "attempts", "tries", "cached"}; !slices.Equal(run, want) {
		t.Errorf("run columns %v, want %v", run, want)
	}
	var want []string
	for i, name := range h {
		if !slices.Contains(run, name) {
			want = append(want, v[i])
		}
	}
	want = append(want, "0.25,0.75")
	if !slices.Equal(cells, want) {
		t.Errorf("CellColumns = %v\nwant %v", cells, want)
	}
	if v[slices.Index(h, "score")] != "4" || v[slices.Index(h, "cost_usd")] != "0.0000125" || v[slices.Index(h, "entropy")] != "1.25e-07" {
		t.Errorf("values %v", v)
	}
}
