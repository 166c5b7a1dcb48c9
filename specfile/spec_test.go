package specfile

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/silicolab/silico/experiment"
)

func TestLoadFrameworkExample(t *testing.T) {
	s, err := Load("testdata/bfi_example.json")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Name != "Big Five Inventory example" || len(s.Seeds) != 1 || s.Seeds[0] != 7 {
		t.Errorf("name/seeds = %q %v", s.Name, s.Seeds)
	}
	m := s.Models[0]
	if m.ID != "qwen" || m.Name != "qwen2.5" || m.Provider != experiment.ProviderOpenAI || m.BaseURL != "http://localhost:11434/v1" || m.Params.MaxTokens != 64 {
		t.Errorf("model = %+v", m)
	}
	if len(s.Personas) != 1 || s.Personas[0].ID != "Optimistic Persona" || s.Personas[0].Attributes["age"] != "18" {
		t.Errorf("personas = %+v", s.Personas)
	}
	if got, want := s.PersonaDescription(0), "Ms Muller is 18 years old and very open minded."; got != want {
		t.Errorf("PersonaDescription = %q, want %q", got, want)
	}
	q := s.Questionnaire
	if q.Instruction != "Rate each statement." || len(q.Options.Options) != 5 || q.Options.Delimiter != ", " {
		t.Errorf("questionnaire = %+v", q)
	}
	if len(q.Scales) != 2 || q.Scales[1] != (experiment.Scale{ID: "2", Name: "Agreeableness"}) {
		t.Errorf("scales = %+v", q.Scales)
	}
	if len(q.Items) != 2 || q.Items[0].ID != "1" || q.Items[1].ID != "2" || !q.Items[1].Reversed || q.Items[1].Scale != "2" {
		t.Errorf("items = %+v", q.Items)
	}
	if sc, ok := s.Score(1, "4"); !ok || sc != 2 {
		t.Errorf("Score(reversed item, 4) = %d, %v; want 2", sc, ok)
	}
	msgs, err := s.Render(s.Cell(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []experiment.Message{
		{Role: "system", Content: "Answer as: Ms Muller is 18 years old and very open minded.\nRate each statement."},
		{Role: "user", Content: "Question: I see myself as someone who is talkative.\nAnswer Options: 1. Disagree strongly, 2. Disagree a little, 3. Neutral, 4. Agree a little, 5. Agree strongly\nAnswer:"},
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("Render =\n%q\nwant\n%q", msgs, want)
	}
}

func TestLoadIPIP50(t *testing.T) {
	s, err := Load("testdata/ipip50.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := s.Summary(), "IPIP-50 · 2 models × 3 seeds × 50 items × 2 personas = 600 calls"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if s.Seeds[1] != 2 {
		t.Errorf("seeds = %v", s.Seeds)
	}
	it := s.Questionnaire.Items
	if it[0].ID != "1" || it[0].Scale != "E" || it[0].Reversed || !it[1].Reversed || it[49].ID != "50" {
		t.Errorf("items = %+v %+v %+v", it[0], it[1], it[49])
	}
	if got := s.PersonaDescription(1); got != "Mr Okafor is 64 years old and lives in Lagos." {
		t.Errorf("PersonaDescription(1) = %q", got)
	}
	if time.Duration(s.Run.CallTimeout) != 30*time.Second || s.Run.MaxConcurrency != 16 {
		t.Errorf("run = %+v", s.Run)
	}
	if s.Models[1].Price == nil || s.Models[1].Price.OutputPerMTok != 0.6 {
		t.Errorf("price = %+v", s.Models[1].Price)
	}
}

// The canonical JSON form of a loaded spec is itself a spec that loads to the same thing.
func TestCanonicalJSONRoundTrip(t *testing.T) {
	s, err := Load("testdata/ipip50.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse(b, "canonical.json", ".")
	if err != nil {
		t.Fatalf("Parse(canonical JSON): %v", err)
	}
	b2, _ := json.MarshalIndent(s2, "", "  ")
	if string(b) != string(b2) {
		t.Errorf("round trip differs:\n%s\n---\n%s", b, b2)
	}
	if s.Hash() != s2.Hash() || len(s.Hash()) != 12 {
		t.Errorf("Hash %q vs %q", s.Hash(), s2.Hash())
	}
	var raw experiment.Spec
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Hash() != s.Hash() {
		t.Errorf("Hash of the JSON workflow input differs: %q vs %q", raw.Hash(), s.Hash())
	}
	raw.Seeds = append(raw.Seeds, 99)
	if raw.Hash() == s.Hash() {
		t.Errorf("Hash did not change with the seeds")
	}
}

func TestAllErrorsCollected(t *testing.T) {
	doc := `name: x
models:
  - {id: a, name: m, rpm: -1, provider: nope}
personas: [{id: p, template: "{oops}"}]
questionnaire:
  items: [{id: "1", text: Q}, {id: "1", text: R}]
run: {on_error: never, chunk_size: -3}
extra: 1
`
	_, err := Parse([]byte(doc), "x.yaml", ".")
	var errs experiment.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse = %v", err)
	}
	want := []string{"x.yaml:3:", "models[0].rpm", "models[0].provider", "personas[0].template", "questionnaire.options",
		"questionnaire.items[1].id", "run.on_error", "run.chunk_size", "x.yaml:8:1: extra: unknown key"}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("errors miss %q:\n%s", w, msg)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != len(errs) {
		t.Errorf("Error() has %d lines for %d errors", n, len(errs))
	}
	var one *experiment.Error
	if !errors.As(err, &one) {
		t.Errorf("errors.As(*experiment.Error) failed")
	}
	// experiment.Errors come in file order.
	for i := 1; i < len(errs); i++ {
		if errs[i].Line < errs[i-1].Line {
			t.Errorf("errors out of order: %v before %v", errs[i-1], errs[i])
		}
	}
}

func TestSyntaxErrorHasPosition(t *testing.T) {
	for _, doc := range []string{"name: [x\nseeds: 1\n", "{\"name\": \"x\",\n \"seeds\": [1,}\n"} {
		_, err := Parse([]byte(doc), "s.yaml", ".")
		var errs experiment.Errors
		if !errors.As(err, &errs) || errs[0].Line == 0 || !strings.Contains(errs[0].Msg, "not valid YAML") {
			t.Errorf("Parse(%q) = %v, want a syntax error with a line", doc, err)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/nope.yaml")
	if err == nil || !strings.Contains(err.Error(), "testdata/nope.yaml") {
		t.Errorf("Load(missing) = %v", err)
	}
}

// TestBinarySpecIsNotText: a file with NUL bytes or bytes that are not UTF-8 near its start is named as not a
// text file, with none of its bytes in the error; a UTF-8 character cut by the end of the sniffed start is text.
func TestBinarySpecIsNotText(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("# ", textSniff/2-1) + "#é\nname: x\n" // the é's two bytes straddle the sniffed start
	for _, tc := range []struct {
		name, data, want string
	}{
		{"executable", "\x7fELF\x02\x01\x01\x00\x00\x00 junk\x01\x02", "not a text file (a spec is YAML or JSON)"},
		{"latin-1", "name: caf\xe9\nseeds: [1]\n", "not a text file (a spec is YAML or JSON)"},
		{"utf-16", "\xff\xfen\x00a\x00m\x00e\x00", "not a UTF-8 text file (it is UTF-16): save it as UTF-8"},
		{"cut character", long, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if tc.want == "" {
				if err != nil && strings.Contains(err.Error(), "not a text file") {
					t.Errorf("Load = %v, want it read as text", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), path+": "+tc.want) {
				t.Errorf("Load = %q, want %q", err, path+": "+tc.want)
			}
			if err != nil && (strings.Contains(err.Error(), "junk") || strings.Contains(err.Error(), "caf") || strings.ContainsRune(err.Error(), utf8.RuneError)) {
				t.Errorf("the error echoes the file's bytes: %q", err)
			}
		})
	}
}
