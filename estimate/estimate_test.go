package estimate

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/specfile"
)

// specYAML builds a spec of the given models (YAML flow mappings), items, personas and run settings.
func specYAML(models []string, seeds, items, personas int, prompt, run string) string {
	var b strings.Builder
	b.WriteString("name: estimate test\nseeds: [")
	for i := range seeds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", i+1)
	}
	b.WriteString("]\nmodels:\n")
	for _, m := range models {
		fmt.Fprintf(&b, "  - %s\n", m)
	}
	b.WriteString(prompt)
	b.WriteString("personas:\n")
	for p := range personas {
		fmt.Fprintf(&b, "  - {id: p%d, attributes: {title: Dr, name: Person%d, age: %d, job: job number %d}, template: \"{title} {name} is {age} and does {job}.\"}\n",
			p, p, 20+p%60, p*7)
	}
	b.WriteString("questionnaire:\n  name: test\n  instruction: Answer honestly, as yourself.\n  options:\n")
	b.WriteString("    - {id: \"1\", text: \"1. Disagree\", weight: 1}\n    - {id: \"2\", text: \"2. Agree\", weight: 2}\n  items:\n")
	for i := range items {
		fmt.Fprintf(&b, "    - {id: q%d, text: \"I like item number %d and its %s.\"}\n", i, i, strings.Repeat("x", i%17))
	}
	b.WriteString(run)
	return b.String()
}

func parse(t testing.TB, yaml string) *experiment.Spec {
	t.Helper()
	s, err := specfile.Parse([]byte(yaml), "spec.yaml", ".")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, yaml)
	}
	return s
}

func tokenizer(t testing.TB) *llm.Tokenizer {
	t.Helper()
	tok, err := llm.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// threeModels spans both encodings and an unpriced model.
var threeModels = []string{
	"{id: mini, name: gpt-4o-mini, params: {max_tokens: 20}}",
	"{id: four, name: gpt-4, price: {input_per_mtok: 1, output_per_mtok: 2}}",
	"{id: open, name: llama3, params: {max_tokens: 5}}",
}

func TestPromptTokensExact(t *testing.T) {
	// A verbalized model's prompts carry an instruction the others' do not, in the same encoding as mini's.
	verbalized := append([]string{"{id: stated, name: gpt-4o, params: {max_tokens: 20}, answer: {mode: verbalized}}"}, threeModels...)
	for _, tc := range []struct {
		models []string
		prompt string
	}{
		{threeModels, ""}, // the default chat prompt
		{threeModels, "prompt: {type: normal, template: \"{persona_description} {general_instruction}\\n{question}\\n{answer_options}\"}\n"},
		{verbalized, ""},
		// Each cell a main call and a verbalized probe; balanced order doubles every cell again.
		{modes(threeModels), "questionnaire_order_placeholder"},
	} {
		order := ""
		if tc.prompt == "questionnaire_order_placeholder" {
			tc.prompt, order = "", "  order: {mode: balanced}\n"
		}
		spec := parse(t, strings.Replace(specYAML(tc.models, 2, 4, 3, tc.prompt, ""), "  items:\n", order+"  items:\n", 1))
		if len(tc.models) > len(threeModels) {
			spec.Models = append(spec.Models[1:], spec.Models[0]) // threeModels first, as the checks below index them
		}
		tok := tokenizer(t)
		est, err := Compute(spec, tok)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, len(spec.Models))
		for i := range spec.NumCells() {
			c := spec.Cell(i)
			msgs, err := spec.Render(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			want[c.Model] += tok.CountMessages(spec.Models[c.Model].Name, msgs)
		}
		total := 0
		for i, m := range est.Models {
			if m.PromptTokens != want[i] {
				t.Errorf("%s: prompt tokens %d, want %d (tok.CountMessages over every cell)", m.Model, m.PromptTokens, want[i])
			}
			if m.Cells != spec.NumCells()/len(spec.Models) || m.Cells < 2*4*3 {
				t.Errorf("%s: cells %d, want %d", m.Model, m.Cells, spec.NumCells()/len(spec.Models))
			}
			total += want[i]
		}
		if est.PromptTokens != total || est.Cells != spec.NumCells() {
			t.Errorf("totals: %d tokens / %d cells, want %d / %d", est.PromptTokens, est.Cells, total, spec.NumCells())
		}
		n := est.Models[0].Cells
		if got := []int{est.Models[0].MaxCompletionTokens, est.Models[1].MaxCompletionTokens, est.Models[2].MaxCompletionTokens}; got[0] != n*20 ||
			got[1] != n*experiment.DefaultMaxTokens || got[2] != n*5 {
			t.Errorf("max completion tokens %v, want [%d %d %d]", got, n*20, n*experiment.DefaultMaxTokens, n*5)
		}
	}
}

// modes gives each model answer.modes [logprobs, verbalized]: a main call and a verbalized probe per cell.
func modes(models []string) []string {
	out := make([]string, len(models))
	for i, m := range models {
		out[i] = strings.TrimSuffix(m, "}") + ", answer: {modes: [logprobs, verbalized]}}"
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12+1e-9*math.Abs(b) }

func TestCost(t *testing.T) {
	spec := parse(t, specYAML(threeModels, 2, 4, 3, "", ""))
	est, err := Compute(spec, tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	mini, four, open := est.Models[0], est.Models[1], est.Models[2]

	// gpt-4o-mini from the built-in table: $0.15 / $0.60 per million.
	if !mini.Priced {
		t.Fatal("gpt-4o-mini unpriced")
	}
	if want := (float64(mini.PromptTokens)*0.15 + 24*0.60) / 1e6; !near(mini.MinCostUSD, want) {
		t.Errorf("mini min cost %g, want %g", mini.MinCostUSD, want)
	}
	if want := (float64(mini.PromptTokens)*0.15 + 24*20*0.60) / 1e6; !near(mini.MaxCostUSD, want) {
		t.Errorf("mini max cost %g, want %g", mini.MaxCostUSD, want)
	}
	// The spec's price: $1 / $2 per million.
	if want := (float64(four.PromptTokens) + 2*24) / 1e6; !near(four.MinCostUSD, want) {
		t.Errorf("four min cost %g, want %g", four.MinCostUSD, want)
	}
	if want := (float64(four.PromptTokens) + 2*24*256) / 1e6; !near(four.MaxCostUSD, want) {
		t.Errorf("four max cost %g, want %g", four.MaxCostUSD, want)
	}
	if open.Priced || open.MinCostUSD != 0 || open.MaxCostUSD != 0 {
		t.Errorf("llama3: %+v, want unpriced at cost 0", open)
	}
	if !near(est.MinCostUSD, mini.MinCostUSD+four.MinCostUSD) || !near(est.MaxCostUSD, mini.MaxCostUSD+four.MaxCostUSD) {
		t.Errorf("total cost %g – %g, want the priced models' sum", est.MinCostUSD, est.MaxCostUSD)
	}
	if !strings.Contains(strings.Join(est.Notes, "\n"), "model open: no price known; set price: in the spec") {
		t.Errorf("notes %q lack the unpriced model", est.Notes)
	}
}

func TestBucketBound(t *testing.T) {
	tests := []struct {
		n, perMinute int
		want         time.Duration
	}{
		{n: 100, perMinute: 0, want: 0},                // no limit
		{n: 60, perMinute: 60, want: 0},                // fits in the first (full) bucket
		{n: 120, perMinute: 60, want: time.Minute},     // one bucket free, one minute of refill
		{n: 600, perMinute: 60, want: 9 * time.Minute}, // (600-60)/60
		{n: 90, perMinute: 60, want: 30 * time.Second}, // half a minute of refill
		{n: 100_000, perMinute: 5000, want: 19 * time.Minute},
	}
	for _, tc := range tests {
		if got := bucketBound(tc.n, tc.perMinute); got != tc.want {
			t.Errorf("bucketBound(%d, %d) = %v, want %v", tc.n, tc.perMinute, got, tc.want)
		}
	}
}

func TestWallBound(t *testing.T) {
	tok := tokenizer(t)
	// 2 seeds × 10 items × 30 personas = 600 cells per model.
	models := []string{
		"{id: r, name: gpt-4o-mini, rpm: 60, params: {max_tokens: 10}}",              // rpm: (600-60)/60 = 9 min
		"{id: t, name: gpt-4o-mini, rpm: 6000, tpm: 5000, params: {max_tokens: 10}}", // tpm binds
		"{id: c, name: gpt-4o-mini, params: {max_tokens: 10}}",                       // no rate limit
	}
	for _, tc := range []struct {
		parallel int
		sum      bool
	}{{parallel: 1, sum: true}, {parallel: 2}, {parallel: 8}} {
		spec := parse(t, specYAML(models, 2, 10, 30, "", fmt.Sprintf("run: {max_parallel_passes: %d}\n", tc.parallel)))
		est, err := Compute(spec, tok)
		if err != nil {
			t.Fatal(err)
		}
		r, tp, c := est.Models[0], est.Models[1], est.Models[2]
		if r.MinWall != 9*time.Minute || r.LimitedBy != LimitRPM {
			t.Errorf("rpm model: %v by %q, want 9m by rpm", r.MinWall, r.LimitedBy)
		}
		reserved := tp.PromptTokens + tp.MaxCompletionTokens
		want := time.Duration(float64(reserved-5000) / 5000 * float64(time.Minute))
		if tp.MinWall != want || tp.LimitedBy != LimitTPM {
			t.Errorf("tpm model: %v by %q, want %v by tpm (%d reserved tokens)", tp.MinWall, tp.LimitedBy, want, reserved)
		}
		if c.MinWall != 0 || c.LimitedBy != LimitConcurrency {
			t.Errorf("unlimited model: %v by %q, want 0 by concurrency", c.MinWall, c.LimitedBy)
		}
		wantRun := max(r.MinWall, tp.MinWall)
		if tc.sum {
			wantRun = r.MinWall + tp.MinWall
		}
		if est.MinWall != wantRun {
			t.Errorf("max_parallel_passes %d: run bound %v, want %v", tc.parallel, est.MinWall, wantRun)
		}
	}
}

// TestCumulative checks the cumulative estimate against prompts rendered with real histories: answers of exactly
// max_tokens tokens reach the upper bound, one-token answers the floor the minimum cost assumes.
func TestCumulative(t *testing.T) {
	const maxTok = 12
	tok := tokenizer(t)
	models := []string{
		fmt.Sprintf("{id: a, name: gpt-4o-mini, price: {input_per_mtok: 1, output_per_mtok: 0}, params: {max_tokens: %d}}", maxTok),
		fmt.Sprintf("{id: b, name: gpt-3.5-turbo, price: {input_per_mtok: 1, output_per_mtok: 0}, params: {max_tokens: %d}}", maxTok),
	}
	plainSpec := parse(t, specYAML(models, 2, 5, 3, "", ""))
	spec := parse(t, specYAML(models, 2, 5, 3, "", "run: {cumulative: true}\n"))
	plain, err := Compute(plainSpec, tok)
	if err != nil {
		t.Fatal(err)
	}
	est, err := Compute(spec, tok)
	if err != nil {
		t.Fatal(err)
	}
	// direct renders every cell with a history of answer, as the runner does, and counts the prompts.
	direct := func(model int, answer string) int {
		if n := tok.Count(spec.Models[model].Name, answer); answer != "a" && n != maxTok {
			t.Fatalf("test answer has %d tokens, want %d", n, maxTok)
		}
		total := 0
		hist := make([][]experiment.Turn, len(spec.Personas))
		for i := range spec.NumCells() {
			c := spec.Cell(i)
			if c.Model != model {
				continue
			}
			if c.Item == 0 {
				hist[c.Persona] = nil // a new seed starts without memory
			}
			msgs, err := spec.Render(c, hist[c.Persona])
			if err != nil {
				t.Fatal(err)
			}
			total += tok.CountMessages(spec.Models[model].Name, msgs)
			hist[c.Persona] = append(hist[c.Persona], experiment.Turn{User: msgs[len(msgs)-1].Content, Assistant: answer})
		}
		return total
	}
	for i, m := range est.Models {
		if want := direct(i, strings.Repeat(" a", maxTok)); m.PromptTokens != want {
			t.Errorf("%s: cumulative prompt tokens %d, want %d (max-length answers)", m.Model, m.PromptTokens, want)
		}
		if want := float64(direct(i, "a")) / 1e6; !near(m.MinCostUSD, want) {
			t.Errorf("%s: min cost %g, want %g (one-token answers)", m.Model, m.MinCostUSD, want)
		}
		if m.PromptTokens <= plain.Models[i].PromptTokens {
			t.Errorf("%s: cumulative %d tokens, not above plain %d", m.Model, m.PromptTokens, plain.Models[i].PromptTokens)
		}
	}
	if notes := strings.Join(est.Notes, "\n"); !strings.Contains(notes, "cumulative") || !strings.Contains(notes, "upper bound") {
		t.Errorf("notes %q do not say cumulative prompt tokens are an upper bound", est.Notes)
	}
}

func TestEmptyAndNil(t *testing.T) {
	if _, err := Compute(nil, nil); err == nil {
		t.Error("nil spec: no error")
	}
}

// BenchmarkCompute100k estimates a 100,000-cell grid: 2 models (one per encoding) × 2 seeds × 50 items × 500
// personas. "distinct" renders a prompt whose one message mixes item and persona, so every (item, persona) is a
// distinct text to tokenize; "chat" is the default prompt, whose messages depend on the item or the persona alone.
func BenchmarkCompute100k(b *testing.B) {
	models := []string{"{id: a, name: gpt-4o-mini, rpm: 5000, tpm: 2000000}", "{id: b, name: gpt-3.5-turbo, rpm: 3500}"}
	for _, bc := range []struct{ name, prompt string }{
		{"chat", ""},
		{"distinct", "prompt: {type: normal, template: \"{persona_description} {general_instruction}\\n{question}\\n{answer_options}\"}\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			spec := parse(b, specYAML(models, 2, 50, 500, bc.prompt, ""))
			if spec.NumCells() != 100_000 {
				b.Fatalf("%d cells", spec.NumCells())
			}
			tok := tokenizer(b)
			tok.Count("gpt-4o-mini", "load o200k_base before timing")
			b.ResetTimer()
			for b.Loop() {
				if _, err := Compute(spec, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLineSplitExact checks that counting a text line by line, as textCounter does, gives tiktoken's count of the
// whole text under both encodings, on random texts rich in the characters where the split could go wrong.
func TestLineSplitExact(t *testing.T) {
	tok := tokenizer(t)
	atoms := []string{"\n", "\n", "\r\n", " ", "  ", "\t", "/", "//", ".", ",", "'s", "'", "\"", "-", "(", ")", "1", "42",
		"12345", "a", "The", "word", "ABC", "é", "日本", "\u00a0", "\u2003", "😀", "{", "}", ":", "#", "*", "\n/", "\n-", "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, model := range []string{"gpt-4o-mini", "gpt-4"} {
		tc := textCounter{tok: tok, model: model, lines: map[string]int{}}
		for range 3000 {
			var b strings.Builder
			for range rng.IntN(40) {
				b.WriteString(atoms[rng.IntN(len(atoms))])
			}
			text := b.String()
			if got, want := tc.count(text), tok.Count(model, text); got != want {
				t.Fatalf("%s: %q: line-by-line count %d, whole-text count %d", model, text, got, want)
			}
		}
	}
}

// Pictures in files (inlined as data URLs) add their image tokens to every cell that shows them; pictures given
// by URL are noted, not counted.
func TestImageTokens(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1024, 1024))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "face.png"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := `name: pictures
seeds: [1, 2]
models: [{name: gpt-4o-mini, params: {max_tokens: 5}}]
personas: [{id: a}, {id: b, image: face.png}]
questionnaire:
  options: [No, Yes]
  items:
    - {text: Rate this face, image: face.png}
    - {text: Rate this ad, images: ["https://img.example/ad.png"]}
`
	plain := strings.NewReplacer(", image: face.png", "", `images: ["https://img.example/ad.png"]`, "id: x").Replace(doc)
	withPics, err := specfile.Parse([]byte(doc), filepath.Join(dir, "spec.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	without, err := specfile.Parse([]byte(plain), filepath.Join(dir, "spec.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	tok := tokenizer(t)
	est, err := Compute(withPics, tok)
	if err != nil {
		t.Fatal(err)
	}
	base, err := Compute(without, tok)
	if err != nil {
		t.Fatal(err)
	}
	// Per seed: the face item with both personas (2 × 765), persona b's face with both items (2 × 765).
	const want = 2 * (4 * 765)
	if est.ImageTokens != want || est.PromptTokens-base.PromptTokens != want {
		t.Errorf("image tokens %d (prompt tokens %d more than without pictures), want %d", est.ImageTokens, est.PromptTokens-base.PromptTokens, want)
	}
	if !strings.Contains(strings.Join(est.Notes, "\n"), "4 pictures given by URL are not counted") {
		t.Errorf("notes %q: want the pictures given by URL noted", est.Notes)
	}
	// A balanced order asks every cell twice, and each call sends the pictures again.
	balanced, err := specfile.Parse([]byte(strings.Replace(doc, "  options:", "  order: {mode: balanced}\n  options:", 1)), filepath.Join(dir, "spec.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if est, err := Compute(balanced, tok); err != nil || est.ImageTokens != 2*want {
		t.Errorf("balanced: image tokens %d (%v), want %d", est.ImageTokens, err, 2*want)
	}
}

// TestGridIsTheCells: the estimate carries the call count as the product of the grid's factors, and it is the
// cells it estimates, for specs over every factor of the design space (wordings, prompts, orders, probes).
func TestGridIsTheCells(t *testing.T) {
	tok := tokenizer(t)
	for seed := range uint64(20) {
		spec := experimenttest.Design(seed, experimenttest.Defaults())
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		est, err := Compute(&spec, tok)
		if err != nil {
			t.Fatal(err)
		}
		product := 1
		for _, f := range est.Grid.Factors {
			product *= f.N
		}
		if product != est.Cells || est.Grid.Calls != est.Cells || est.Cells != spec.NumCells() {
			t.Errorf("%s: the factors %v multiply to %d, the grid says %d calls, the estimate has %d cells of %d",
				spec.Name, est.Grid.Factors, product, est.Grid.Calls, est.Cells, spec.NumCells())
		}
	}
}
