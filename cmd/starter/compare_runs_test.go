package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/compare"
	"github.com/silicolab/silico/compare/comparetest"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/store"
)

// compareRunsSpec is a small spec (1 model × 2 seeds × 6 items × 8 personas × 2 option orders = 192 cells)
// answered in logprobs mode, so that every cell has a distribution over the options, and asked with the options
// in both orders, which the simulator answers differently; %s are its seeds and its bootstrap settings.
const compareRunsSpec = `name: compare two runs
seeds: %s
analysis: {bootstrap: %s}
models:
  - id: sim
    name: sim-model
    provider: sim
    params: {temperature: 0.7, max_tokens: 16}
    answer: {mode: logprobs}
simulator: {latency: 1ms}
prompt:
  type: chat
  messages:
    - {role: system, content: "Answer as this person: {persona_description}"}
    - {role: user, content: "{question}\n\n{answer_options}\n\nAnswer with the number of exactly one option."}
personas:
  - {id: p1, attributes: {age: 19, job: a student}}
  - {id: p2, attributes: {age: 34, job: a nurse}}
  - {id: p3, attributes: {age: 41, job: a founder}}
  - {id: p4, attributes: {age: 56, job: a farmer}}
  - {id: p5, attributes: {age: 28, job: an engineer}}
  - {id: p6, attributes: {age: 47, job: a teacher}}
  - {id: p7, attributes: {age: 62, job: an accountant}}
  - {id: p8, attributes: {age: 71, job: a captain}}
questionnaire:
  order: {mode: balanced}
  options:
    - {id: "1", text: "1. Very Inaccurate", weight: 1}
    - {id: "2", text: "2. Moderately Inaccurate", weight: 2}
    - {id: "3", text: "3. Neither Accurate Nor Inaccurate", weight: 3}
    - {id: "4", text: "4. Moderately Accurate", weight: 4}
    - {id: "5", text: "5. Very Accurate", weight: 5}
  scales:
    - {id: E, name: Extraversion}
    - {id: C, name: Conscientiousness}
  items:
    - {id: "1", text: "I am the life of the party.", scale: E}
    - {id: "2", text: "I don't talk a lot.", scale: E, reversed: true}
    - {id: "3", text: "I feel comfortable around people.", scale: E}
    - {id: "4", text: "I am always prepared.", scale: C}
    - {id: "5", text: "I leave my belongings around.", scale: C, reversed: true}
    - {id: "6", text: "I pay attention to details.", scale: C}
`

// TestCompareTwoRealRuns runs one small spec twice on the embedded server and the simulator, with seeds [1, 2]
// and [3, 4], exports both, and checks that compare pairs the seeds by position and that every figure of its
// compare.csv is what code of its own computes from the two results.csv files, with run A's bootstrap settings
// (not B's). A run compared with itself has distances 0 and κ 1.
func TestCompareTwoRealRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two specs on the embedded server")
	}
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv(store.EnvDSN, "")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	var specs, outs [2]string
	for i, set := range []struct{ seeds, bootstrap string }{{"[1, 2]", "{samples: 400, seed: 9}"}, {"[3, 4]", "{samples: 20, seed: 2}"}} {
		specs[i] = writeSpecFile(t, dir, fmt.Sprintf("spec-%d.yaml", i), fmt.Sprintf(compareRunsSpec, set.seeds, set.bootstrap))
		outs[i] = filepath.Join(dir, fmt.Sprintf("out-%d", i))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		var stdout, stderr bytes.Buffer
		code := run(ctx, []string{"run", specs[i], "--no-ui", "--state-dir", state, "--output", outs[i], "--progress-every", "1m"}, &stdout, &stderr)
		cancel()
		if code != exitOK {
			t.Fatalf("starter run %s: exit %d\nstdout:\n%s\nstderr:\n%s", specs[i], code, stdout.String(), stderr.String())
		}
	}

	cmp := filepath.Join(dir, "cmp")
	code, stdout, errOut := runCLI(t, "compare", specs[0], specs[1], "--state-dir", state, "-o", cmp)
	if code != exitOK {
		t.Fatalf("compare: exit %d; stderr:\n%s", code, errOut)
	}
	if want := "seeds by position (1=3, 2=4)"; !strings.Contains(stdout, want) {
		t.Errorf("summary does not say %q:\n%s", want, stdout)
	}
	got := readCompareCSV(t, filepath.Join(cmp, compare.CSVFile))
	want := comparetest.Independent(t, filepath.Join(outs[0], results.CSVFile), filepath.Join(outs[1], results.CSVFile),
		400, 9, nil, map[string]string{"1": "3", "2": "4"})
	if len(got) != len(want) || len(got) != 6+1 {
		t.Fatalf("compare.csv has %d rows, independently %d; want 6 items and the model's row", len(got), len(want))
	}
	for i, row := range got {
		if row["matched"] != map[bool]string{true: "192", false: "32"}[row["scope"] == compare.ScopeModel] {
			t.Errorf("%s/%s: %s matched cells, want every cell of the run", row["model"], row["item"], row["matched"])
		}
		if row["shift_lo"] == "" || row["w1"] == "" {
			t.Errorf("%s/%s: no interval or no W1", row["model"], row["item"])
		}
		for name, g := range row {
			if w := want[i][name]; g != w && !closeNumbers(g, w) {
				t.Errorf("%s/%s %s = %q, independently %q", row["model"], row["item"], name, g, w)
			}
		}
	}

	self := filepath.Join(dir, "self")
	if code, _, errOut := runCLI(t, "compare", specs[1], specs[1], "--state-dir", state, "-o", self); code != exitOK {
		t.Fatalf("compare with itself: exit %d; stderr:\n%s", code, errOut)
	}
	for _, row := range readCompareCSV(t, filepath.Join(self, compare.CSVFile)) {
		for name, want := range map[string]string{"w1": "0", "jsd": "0", "shift": "0", "kappa": "1", "agreement": "1", "icc": "1",
			"only_a": "0", "only_b": "0", "matched_on": "model seed item persona order"} {
			if row[name] != want {
				t.Errorf("run beside itself, %s/%s: %s = %q, want %s", row["model"], row["item"], name, row[name], want)
			}
		}
	}
}

// readCompareCSV reads compare.csv as one map of column to value per row.
func readCompareCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for j, h := range rows[0] {
			m[h] = r[j]
		}
		out = append(out, m)
	}
	return out
}

// closeNumbers: a and b are numbers within 1e-12 (the two computations sum in other orders).
func closeNumbers(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && math.Abs(x-y) <= 1e-12
}
