package results_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/wire"
)

// likertTexts are the texts of the options of the label tests, as written: the labels a model sees are their
// enumerations, whatever ids the spec gives the options.
var likertTexts = []string{"1. Disagree strongly", "2. Disagree", "3. Neither agree nor disagree", "4. Agree", "5. Agree strongly"}

// idSchemes name the options of likertTexts in the ways a spec may: ids equal to the enumeration, other digits
// (one of them, 9, no label shown; the others each another option's label), letters, words, and a mix.
var idSchemes = []struct {
	name string
	ids  []string
}{
	{"enumeration", []string{"1", "2", "3", "4", "5"}},
	{"digits", []string{"5", "4", "9", "2", "1"}},
	{"letters", []string{"e", "d", "c", "b", "a"}},
	{"words", []string{"disagree_strongly", "disagree", "neither", "agree", "agree_strongly"}},
	{"mixed", []string{"3", "b", "neither", "1", "x9"}},
}

// orderModes are the order sections the label tests run under; "pinned" shuffles with the last option pinned.
var orderModes = []string{"as_written", "reversed", "balanced", "shuffled", "pinned"}

// labelSpec is the YAML of a run of 2 items × 3 personas × 2 seeds on the simulator, its options named ids
// (texts likertTexts), shown under order mode, answered with answer (a run.answer section).
func labelSpec(ids []string, order, answer string) string {
	var b strings.Builder
	b.WriteString(`name: labels
seeds: [1, 2]
models:
  - {id: sim, name: sim-model, provider: sim, params: {temperature: 0.7, max_tokens: 200}}
prompt:
  type: chat
  messages:
    - role: user
      content: |-
        You are {persona_description}. Statement: "{question}"
        {answer_options}
        Answer with the number of exactly one option.
personas:
  - {id: p1, template: "a nurse"}
  - {id: p2, template: "a farmer"}
  - {id: p3, template: "a coder"}
questionnaire:
  name: likert
  scales: [{id: A, name: Alpha}]
  options:
`)
	for k, id := range ids {
		fmt.Fprintf(&b, "    - {id: %q, text: %q, weight: %d}\n", id, likertTexts[k], k+1)
	}
	switch order {
	case "as_written":
	case "pinned":
		fmt.Fprintf(&b, "  order: {mode: shuffled, pin: [%q]}\n", ids[len(ids)-1])
	default:
		fmt.Fprintf(&b, "  order: {mode: %s}\n", order)
	}
	b.WriteString(`  items:
    - {id: q1, text: "I like mornings.", scale: A}
    - {id: q2, text: "I like rain.", scale: A, reversed: true}
    - {id: q3, text: "I like noon.", scale: A}
analysis:
  bootstrap: {samples: 50, seed: 1}
run:
  answer: ` + answer + "\n")
	return b.String()
}

// labelRun is a run of a labelSpec: its spec, the simulator's request log and the rows of results.jsonl by
// cell id.
type labelRun struct {
	spec *experiment.Spec
	reqs []sim.Request
	rows map[string]jsonRow
	dir  string
}

// jsonRow is the part of a results.jsonl line the label tests read.
type jsonRow struct {
	CellID   string             `json:"cell_id"`
	Status   string             `json:"status"`
	OptionID string             `json:"option_id"`
	Raw      string             `json:"raw"`
	Probs    map[string]float64 `json:"probs"`
	Coverage *float64           `json:"coverage"`
}

func runLabels(t *testing.T, yaml string, cfg sim.Config) labelRun {
	t.Helper()
	spec, err := specfile.Parse([]byte(yaml), "labels.yaml", t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	_, canonical, err := spec.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	h, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := runInput(t, canonical, h)
	f, err := os.Open(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]jsonRow{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r jsonRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows[r.CellID] = r
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return labelRun{spec: spec, reqs: h.Requests(), rows: rows, dir: dir}
}

// listed maps the labels the last user message of cell c lists (as the simulator reads the list) to the spec's
// option that text shows, by the text after the label: the test's own reading of the prompt, not silico's.
func listed(t *testing.T, s *experiment.Spec, c experiment.Cell) map[string]int {
	t.Helper()
	msgs, err := s.Render(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	set := s.OptionsFor(c.Item).Options
	out := map[string]int{}
	for _, o := range sim.Options(msgs[len(msgs)-1].Content) {
		label, text, ok := strings.Cut(o, ". ")
		if !ok {
			t.Fatalf("listed option %q has no label", o)
		}
		k := slices.IndexFunc(set, func(p experiment.Option) bool { return strings.HasSuffix(p.Text, ". "+text) })
		if k < 0 {
			t.Fatalf("listed option %q is no option of the spec", o)
		}
		out[strings.ToLower(label)] = k
	}
	return out
}

// TestLogprobsFollowTheShownLabels holds silico's option probabilities to the simulator's own, cell by cell:
// under every id scheme, order mode and answer mode (logprobs; json_schema with logprobs), the probability
// recorded for an option is the mass the server put on the label the prompt showed it with (within what
// top_logprobs leaves out), the coverage is the labels' mass, and the written answer is the option whose label
// the server wrote. Option ids that are other options' labels, or no label at all, must not move the mass.
func TestLogprobsFollowTheShownLabels(t *testing.T) {
	if testing.Short() {
		t.Skip("54 runs on the simulator")
	}
	answers := map[string]string{
		"logprobs":    "{mode: logprobs}",
		"json_schema": "{mode: json_schema, logprobs: true}",
	}
	for _, scheme := range idSchemes {
		for _, order := range orderModes {
			for _, mode := range []string{"logprobs", "json_schema"} {
				t.Run(scheme.name+"/"+order+"/"+mode, func(t *testing.T) {
					r := runLabels(t, labelSpec(scheme.ids, order, answers[mode]), sim.Config{})
					checkLabelProbs(t, r)
				})
			}
		}
	}
	// Seeded sampling shapes the distribution by the prompt alone and draws the answer from it; a position
	// bias moves mass onto the first label shown. Both act on what is shown, and the reading follows.
	seeded := sim.Config{Sampling: sim.SamplingSeeded, PositionBias: sim.PositionBias{Position: sim.BiasFirst, Strength: 0.3}}
	for _, scheme := range idSchemes[1:3] {
		for _, order := range []string{"balanced", "shuffled"} {
			t.Run("seeded/"+scheme.name+"/"+order, func(t *testing.T) {
				checkLabelProbs(t, runLabels(t, labelSpec(scheme.ids, order, answers["logprobs"]), seeded))
			})
		}
	}
}

// labelTolerance bounds |silico's p − the server's p| per option. The server's distribution counts every
// spelling of every label; silico reads the 20 likeliest tokens only, so the spellings of unlikely options
// that fall below the filler tokens are missing from both its numerator and its coverage. A label read as
// another option's moves a whole option's share (tenths, up to 0.96 in the defect this guards against).
const labelTolerance = 0.02

func checkLabelProbs(t *testing.T, r labelRun) {
	t.Helper()
	byCell := map[string]sim.Request{}
	for _, q := range r.reqs {
		if q.Status == 200 && q.Cell != "" {
			byCell[q.Cell] = q
		}
	}
	var worst float64
	for i := range r.spec.NumCells() {
		c := r.spec.Cell(i)
		id := r.spec.CellID(c)
		q, ok := byCell[id]
		row := r.rows[id]
		if !ok || len(q.LabelProbs) == 0 {
			t.Fatalf("cell %s: the simulator recorded no label distribution (%+v)", id, q)
		}
		set := r.spec.OptionsFor(c.Item).Options
		labels := listed(t, r.spec, c)
		want := make([]float64, len(set))
		for j, l := range q.Labels {
			k, ok := labels[strings.ToLower(l)]
			if !ok {
				// A label the prompt does not show (an id in a json_schema enum): the server's mass there
				// is on no option a reader could know.
				continue
			}
			want[k] += q.LabelProbs[j]
		}
		var sum float64
		for _, p := range want {
			sum += p
		}
		written := -1
		if wl := writtenLabel(q, row.Raw); wl != "" {
			if k, ok := labels[strings.ToLower(wl)]; ok {
				written = k
			}
		}
		if row.Status != "ok" || written < 0 || row.OptionID != set[written].ID {
			t.Errorf("cell %s: answer %q recorded as %q (%s); the server wrote the label of option %d", id, row.Raw, row.OptionID, row.Status, written)
		}
		if len(row.Probs) != len(set) || row.Coverage == nil {
			t.Errorf("cell %s: probs %v, coverage %v; want a distribution over the %d options", id, row.Probs, row.Coverage, len(set))
			continue
		}
		if *row.Coverage < 0.5 {
			t.Errorf("cell %s: coverage %.3f; the server put at least 0.87 of the label token's mass on the labels shown", id, *row.Coverage)
		}
		for k, o := range set {
			got, w := row.Probs[o.ID], want[k]/sum
			worst = max(worst, math.Abs(got-w))
			if math.Abs(got-w) > labelTolerance {
				t.Errorf("cell %s option %s (%q): p %.4f, the server's %.4f", id, o.ID, o.Text, got, w)
			}
		}
	}
	t.Logf("largest |p − server's p|: %.4f", worst)
}

// writtenLabel is the label the server wrote in raw: the first of its labels that starts the text, or that a
// JSON answer names.
func writtenLabel(q sim.Request, raw string) string {
	var v struct {
		Answer string `json:"answer"`
	}
	if json.Unmarshal([]byte(raw), &v) == nil && v.Answer != "" {
		return v.Answer
	}
	for _, l := range q.Labels {
		if strings.HasPrefix(raw, l+".") {
			return l
		}
	}
	return ""
}

// TestRelabellingChangesNoOutput renames the options (texts and weights kept) under every id scheme, order mode
// and answer mode, and holds every output to the one of ids equal to the enumeration, ids translated: the
// probabilities in option order, the written answers' positions, modes.csv, distributions.csv, the scale
// statistics and summary.json. The model reads labels, never ids, so no output may depend on them.
func TestRelabellingChangesNoOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("40 runs on the simulator")
	}
	answers := map[string]string{
		"modes":       "{modes: [text, logprobs, verbalized]}",
		"json_schema": "{mode: json_schema, logprobs: true}",
	}
	for _, order := range []string{"as_written", "balanced", "shuffled", "pinned"} {
		for _, mode := range []string{"modes", "json_schema"} {
			base := runLabels(t, labelSpec(idSchemes[0].ids, order, answers[mode]), sim.Config{})
			for _, scheme := range idSchemes[1:] {
				t.Run(scheme.name+"/"+order+"/"+mode, func(t *testing.T) {
					r := runLabels(t, labelSpec(scheme.ids, order, answers[mode]), sim.Config{})
					to := map[string]string{}
					for k, id := range scheme.ids {
						to[id] = idSchemes[0].ids[k]
					}
					sameOutputs(t, base.dir, r.dir, to)
				})
			}
		}
	}
}

// sameOutputs compares the outputs in dir b, its option ids translated by to, with those in dir a: every file
// but results.csv (whose p_<id> columns results.jsonl holds) equal to the byte once translated, results.jsonl
// line by line with the columns of one run (runKeys) masked.
func sameOutputs(t *testing.T, a, b string, to map[string]string) {
	t.Helper()
	ents, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) < 8 {
		t.Fatalf("%d outputs in %s; want the analyses too", len(ents), a)
	}
	for _, e := range ents {
		name := e.Name()
		if name == "results.csv" {
			continue
		}
		want, err := os.ReadFile(filepath.Join(a, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(b, name))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case name == "results.jsonl":
			got, want = runKeys.ReplaceAll(translateJSONL(t, got, to), nil), runKeys.ReplaceAll(want, nil)
		case strings.HasSuffix(name, ".csv"):
			got = translateCSV(t, got, to)
		}
		if string(got) != string(want) {
			gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
			for i := range min(len(gl), len(wl)) {
				if gl[i] != wl[i] {
					t.Errorf("%s line %d differs once the options are renamed:\n got %s\nwant %s", name, i+1, gl[i], wl[i])
					break
				}
			}
			if len(gl) != len(wl) {
				t.Errorf("%s: %d lines, want %d", name, len(gl), len(wl))
			}
		}
	}
}

// translateCSV translates the option_id column of a CSV file.
func translateCSV(t *testing.T, b []byte, to map[string]string) []byte {
	t.Helper()
	lines := strings.Split(string(b), "\n")
	col := slices.Index(strings.Split(lines[0], ","), "option_id")
	if col < 0 {
		return b
	}
	for i := 1; i < len(lines); i++ {
		f := strings.Split(lines[i], ",")
		if col < len(f) {
			if id, ok := to[f[col]]; ok {
				f[col] = id
			}
		}
		lines[i] = strings.Join(f, ",")
	}
	return []byte(strings.Join(lines, "\n"))
}

// translateJSONL translates the option ids in results.jsonl: option_id, top_option, shown and the
// keys of probs, keeping every line's key order.
func translateJSONL(t *testing.T, b []byte, to map[string]string) []byte {
	t.Helper()
	var out []string
	for line := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
		var row map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"option_id", "top_option", "shown"} {
			var v string
			if json.Unmarshal(row[key], &v) != nil || v == "" {
				continue
			}
			ids := strings.Split(v, "|")
			for i, id := range ids {
				ids[i] = to[id]
			}
			q, _ := json.Marshal(strings.Join(ids, "|"))
			line = strings.Replace(line, `"`+key+`":`+string(row[key]), `"`+key+`":`+string(q), 1)
		}
		if p := row["probs"]; string(p) != "null" && p != nil {
			moved := string(p)
			for from, id := range to {
				moved = strings.Replace(moved, `"`+from+`":`, "\"\x00"+id+`":`, 1) // NUL marks a translated key
			}
			line = strings.Replace(line, `"probs":`+string(p), `"probs":`+strings.ReplaceAll(moved, "\x00", ""), 1)
		}
		out = append(out, line)
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// TestLowCoverageIsWarned: a model whose answers do not start where the spec says the label is (a prefix the
// simulator never writes) has no label mass on the labels shown; summary.json says so in its warnings and
// in the model's coverage. The same run without the prefix has its coverage and no warning.
func TestLowCoverageIsWarned(t *testing.T) {
	read := func(dir string) wire.Summary {
		b, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		var s wire.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := read(runLabels(t, labelSpec(idSchemes[1].ids, "as_written", `{mode: logprobs, prefix: "Answer: "}`), sim.Config{}).dir)
	m := s.Models[0]
	if m.Coverage == nil || *m.Coverage != 0 || m.CoverageCells != s.Cells {
		t.Errorf("coverage %v over %d cells; want 0 over all %d", m.Coverage, m.CoverageCells, s.Cells)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "model sim put on average 0.00 of the label token's probability on the labels the prompt showed") {
		t.Errorf("warnings %q; want the low coverage", s.Warnings)
	}
	s = read(runLabels(t, labelSpec(idSchemes[1].ids, "as_written", "{mode: logprobs}"), sim.Config{}).dir)
	if m := s.Models[0]; m.Coverage == nil || *m.Coverage < 0.8 || len(s.Warnings) != 0 {
		t.Errorf("without the prefix: coverage %v, warnings %q; want above 0.8 and none", m.Coverage, s.Warnings)
	}
}
