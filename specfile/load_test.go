package specfile

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/usage"
)

const baseSpec = `name: test
seeds: [1, 2]
models:
  - id: m1
    name: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
  - id: m2
    name: sim-model
    provider: sim
    rpm: 100
prompt:
  type: chat
  messages:
    - role: system
      content: "{persona_description} {general_instruction}"
    - role: user
      content: "{question}\n{answer_options}"
personas:
  - id: p1
    attributes: {name: Ann, age: 30}
  - id: p2
    attributes: {name: Bob, age: 40}
    template: "{name}, {age}"
questionnaire:
  name: q
  instruction: Rate.
  options:
    - {id: "1", text: Disagree, weight: 1}
    - {id: "2", text: Agree, weight: 2}
  scales:
    - {id: E, name: Extraversion}
  items:
    - {id: i1, text: I talk., scale: E}
    - {id: i2, text: I listen., scale: E, reversed: true}
run:
  max_concurrency: 4
  on_error: warn
`

func TestBaseSpecLoads(t *testing.T) {
	s, err := Parse([]byte(baseSpec), "spec.yaml", t.TempDir())
	if err != nil {
		t.Fatalf("base spec: %v", err)
	}
	if got, want := s.Summary(), "test · 2 models × 2 seeds × 2 items × 2 personas = 16 calls"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if s.Models[0].Provider != experiment.ProviderOpenAI || s.Run.OnError != experiment.OnErrorWarn || s.Run.MaxParallelPasses != experiment.DefaultMaxParallelPasses {
		t.Errorf("defaults not applied: %+v %+v", s.Models[0], s.Run)
	}
	if !s.Questionnaire.Items[1].Reversed || s.Questionnaire.Items[1].Scale != "E" {
		t.Errorf("item 2 = %+v", s.Questionnaire.Items[1])
	}
}

// TestBudgetIsExactDollars: budget_usd is read to the picodollar as written, in either notation, not as the
// float64 nearest to it.
func TestBudgetIsExactDollars(t *testing.T) {
	for text, want := range map[string]usage.USD{
		"0.1": usage.Picodollars(100_000_000_000), "12.5": usage.Dollars(12.5), "1e-7": usage.Picodollars(100_000),
		"2.675": usage.Picodollars(2_675_000_000_000), "3": usage.Dollars(3),
		"1234.567890123456": usage.Picodollars(1_234_567_890_123_456),
	} {
		s, err := Parse([]byte(baseSpec+"budget_usd: "+text+"\n"), "spec.yaml", t.TempDir())
		if err != nil {
			t.Fatalf("budget_usd: %s: %v", text, err)
		}
		if s.BudgetUSD != want {
			t.Errorf("budget_usd: %s read as %d picodollars, want %d", text, s.BudgetUSD.Picodollars(), want.Picodollars())
		}
	}
}

func TestSimulatorSettingsLoad(t *testing.T) {
	doc := strings.Replace(baseSpec, "name: test", "name: test\nsimulator:\n  latency: 20ms\n"+
		"  faults: {server_503: 0.1, length: 0.2, content_filter: 0.05, fail_cells: [m2/1/i1/p1, m2/2/i2/p2]}", 1)
	s, err := Parse([]byte(doc), "spec.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := s.Simulator.Faults
	if f.Server503 != 0.1 || f.Length != 0.2 || f.ContentFilter != 0.05 || strings.Join(f.FailCells, ",") != "m2/1/i1/p1,m2/2/i2/p2" {
		t.Errorf("simulator faults %+v, want server_503 0.1, length 0.2, content_filter 0.05 and the two fail cells", f)
	}
	if s.Simulator.Outage != nil {
		t.Errorf("simulator outage %+v, want none when the spec has none", s.Simulator.Outage)
	}
	for _, tc := range []struct {
		outage string
		want   experiment.SimulatorOutage
	}{
		{"{after: 10s, for: 90s, status: 503}", experiment.SimulatorOutage{After: experiment.Duration(10 * time.Second),
			For: experiment.Duration(90 * time.Second), Status: 503}},
		{"{after: 2, for: 5m, kind: refuse}", experiment.SimulatorOutage{After: experiment.Duration(2 * time.Second),
			For: experiment.Duration(5 * time.Minute), Kind: experiment.OutageRefuse}},
		{"{for: 20s, kind: html}", experiment.SimulatorOutage{For: experiment.Duration(20 * time.Second), Kind: experiment.OutageHTML}},
	} {
		doc := strings.Replace(baseSpec, "name: test", "name: test\nsimulator:\n  outage: "+tc.outage, 1)
		s, err := Parse([]byte(doc), "spec.yaml", t.TempDir())
		if err != nil {
			t.Errorf("outage %s: %v", tc.outage, err)
			continue
		}
		if s.Simulator.Outage == nil || *s.Simulator.Outage != tc.want {
			t.Errorf("outage %s = %+v, want %+v", tc.outage, s.Simulator.Outage, tc.want)
		}
	}
}

func TestSimulatorBatchTime(t *testing.T) {
	doc := strings.Replace(baseSpec, "name: test", "name: test\nsimulator:\n  batch_time: 2m", 1)
	s, err := Parse([]byte(doc), "spec.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if s.Simulator.BatchTime != experiment.Duration(2*time.Minute) {
		t.Errorf("batch_time %v, want 2m", time.Duration(s.Simulator.BatchTime))
	}
	doc = strings.Replace(baseSpec, "name: test", "name: test\nsimulator:\n  batch_time: 30h", 1)
	if _, err := Parse([]byte(doc), "spec.yaml", t.TempDir()); err == nil || !strings.Contains(err.Error(), "simulator.batch_time: 30h0m0s is out of range") {
		t.Errorf("batch_time 30h: %v, want out of range", err)
	}
	doc = strings.Replace(baseSpec, "name: test", "name: test\nsimulator:\n  batch_enqueued_tokens: 90000", 1)
	if s, err := Parse([]byte(doc), "spec.yaml", t.TempDir()); err != nil || s.Simulator.BatchEnqueuedTokens != 90000 {
		t.Errorf("batch_enqueued_tokens 90000: %v, %+v", err, s)
	}
	doc = strings.Replace(baseSpec, "name: test", "name: test\nsimulator:\n  batch_enqueued_tokens: -1", 1)
	if _, err := Parse([]byte(doc), "spec.yaml", t.TempDir()); err == nil || !strings.Contains(err.Error(), "simulator.batch_enqueued_tokens") {
		t.Errorf("batch_enqueued_tokens -1: %v, want refused", err)
	}
}

// TestSimulatorPreferences: simulator.preferences reads as a mapping of option texts to weights, survives the
// canonical JSON form, and a negative weight or a value that is no mapping is an error at its place.
func TestSimulatorPreferences(t *testing.T) {
	doc := strings.Replace(baseSpec, "name: test", "name: test\nsimulator:\n  preferences: {\"Neutral\": 10, \"Agree\": 2.5}", 1)
	s, err := Parse([]byte(doc), "spec.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"Neutral": 10, "Agree": 2.5}
	if !maps.Equal(s.Simulator.Preferences, want) {
		t.Errorf("preferences %v, want %v", s.Simulator.Preferences, want)
	}
	_, canonical, err := s.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseInput(canonical, "input")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(back.Simulator.Preferences, want) {
		t.Errorf("preferences after the canonical form %v, want %v", back.Simulator.Preferences, want)
	}
	for _, tc := range []struct{ value, want string }{
		{`{"Neutral": -1}`, "simulator.preferences.Neutral: weight -1"},
		{`{"Neutral": lots}`, "simulator.preferences.Neutral"},
		{`[Neutral]`, "simulator.preferences: want a mapping of texts to numbers"},
	} {
		doc := strings.Replace(baseSpec, "name: test", "name: test\nsimulator:\n  preferences: "+tc.value, 1)
		if _, err := Parse([]byte(doc), "spec.yaml", t.TempDir()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("preferences %s: %v, want an error containing %q", tc.value, err, tc.want)
		}
	}
}

// lineOf is the 1-based number of the first line of doc containing s.
func lineOf(t *testing.T, doc, s string) int {
	t.Helper()
	for i, l := range strings.Split(doc, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("no line contains %q", s)
	return 0
}

// replace replaces old in doc by new; old "§start|end" is the text from start up to end.
func replace(t *testing.T, doc, old, new string) string {
	t.Helper()
	if start, end, ok := strings.Cut(strings.TrimPrefix(old, "§"), "|"); ok && strings.HasPrefix(old, "§") {
		i := strings.Index(doc, start)
		j := strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("no section %q..%q", start, end)
		}
		old = doc[i:j]
	}
	if !strings.Contains(doc, old) {
		t.Fatalf("spec has no %q", old)
	}
	return strings.Replace(doc, old, new, 1)
}

func TestSpecMistakes(t *testing.T) {
	tests := []struct {
		name       string
		old, new   string // one replacement in baseSpec ("§start|end": the text from start up to end); doc replaces the whole spec
		old2, new2 string
		doc        string            // a whole spec instead of a replacement
		files      map[string]string // files next to the spec
		field      string            // the Field of the expected error
		file       string            // its File, default spec.yaml
		at         string            // the expected line is the first one containing at (in the spec, or in file)
		line       int               // or this line
		msg        string            // Msg contains this
		only       bool              // and it is the only error
	}{
		{name: "unknown top-level key", old: "models:", new: "modles:", field: "modles", at: "modles:", msg: `did you mean "models"?`},
		{name: "negative rpm", old: "rpm: 100", new: "rpm: -5", field: "models[1].rpm", at: "rpm:", msg: "negative"},
		{name: "rpm of wrong type", old: "rpm: 100", new: "rpm: fast", field: "models[1].rpm", at: "rpm:", msg: "want a whole number"},
		{name: "burst out of range", old: "rpm: 100", new: "rpm: 100\n    burst: -0.5", field: "models[1].burst", at: "burst:", msg: "out of range"},
		{name: "literal api key", old: "api_key_env: OPENAI_API_KEY", new: "api_key: sk-abc123", field: "models[0].api_key", at: "api_key:", msg: "api_key_env"},
		{name: "key in api_key_env", old: "api_key_env: OPENAI_API_KEY", new: "api_key_env: sk-abc-123", field: "models[0].api_key_env", at: "api_key_env:", msg: "never the key itself"},
		{name: "duplicate model id", old: "id: m2", new: "id: m1", field: "models[1].id", at: "- id: m1\n    name: sim", msg: "duplicate model id"},
		{name: "unknown provider", old: "provider: sim", new: "provider: opneai", field: "models[1].provider", at: "provider:", msg: `did you mean "openai"?`},
		{name: "model without name", old: "    name: sim-model\n", new: "", field: "models[1].name", at: "- id: m2", msg: "missing"},
		{name: "temperature out of range", old: "rpm: 100", new: "params: {temperature: 3}", field: "models[1].params.temperature", at: "temperature", msg: "from 0 to 2"},
		{name: "unknown param", old: "rpm: 100", new: "params: {max_token: 3}", field: "models[1].params.max_token", at: "max_token", msg: `did you mean "max_tokens"?`},
		{name: "base url not a URL", old: "provider: sim", new: "base_url: localhost:11434", field: "models[1].base_url", at: "base_url", msg: "http(s) URL"},
		{name: "unknown prompt placeholder", old: `"{question}\n`, new: `"{questoin}\n`, field: "prompt.messages[1].content", at: "{questoin}", msg: `did you mean "question"?`},
		{name: "single brace", old: `"{question}\n`, new: `"{question} }\n`, field: "prompt.messages[1].content", at: "{question} }", msg: "}}"},
		{name: "bad role", old: "role: user", new: "role: usr", field: "prompt.messages[1].role", at: "role: usr", msg: `did you mean "user"?`},
		{name: "chat prompt without user", old: "role: user", new: "role: assistant", field: "prompt.messages", at: "messages:", msg: `role "user"`},
		{name: "unknown prompt type", old: "type: chat", new: "type: chatt", field: "prompt.type", at: "type: chatt", msg: `did you mean "chat"?`},
		{name: "unknown persona placeholder", old: `"{name}, {age}"`, new: `"{name}, {agee}"`, field: "personas[1].template", at: "{agee}", msg: `did you mean "age"?`},
		{name: "duplicate persona id", old: "id: p2", new: "id: p1", field: "personas[1].id", at: "- id: p1\n    attributes: {name: Bob", msg: "duplicate persona id"},
		{name: "persona attribute not a scalar", old: "{name: Ann, age: 30}", new: "{name: [Ann], age: 30}", field: "personas[0].attributes.name", at: "[Ann]", msg: "single value"},
		{name: "missing options", old: "  options:\n    - {id: \"1\", text: Disagree, weight: 1}\n    - {id: \"2\", text: Agree, weight: 2}\n", new: "", field: "questionnaire.options", at: "questionnaire:", msg: "missing answer options"},
		{name: "duplicate option id", old: `{id: "2", text: Agree`, new: `{id: "1", text: Agree`, field: "questionnaire.options[1].id", at: "text: Agree,", msg: "duplicate option id"},
		{name: "option key misspelt", old: "text: Agree, weight: 2", new: "text: Agree, wieght: 2", field: "questionnaire.options[1].wieght", at: "wieght", msg: `did you mean "weight"?`},
		{name: "undeclared scale", old: "scale: E, reversed", new: "scale: X, reversed", field: "questionnaire.items[1].scale", at: "scale: X", msg: `declared scales: "E"`},
		{name: "duplicate item id", old: "id: i2", new: "id: i1", field: "questionnaire.items[1].id", at: "I listen.", msg: "duplicate item id"},
		{name: "reserved item id", old: "id: i2", new: "id: all", field: "questionnaire.items[1].id", at: "I listen.", msg: `"all" is reserved`},
		{name: "reserved scale id", old: "    - {id: E, name: Extraversion}\n", new: "    - {id: E, name: Extraversion}\n    - {id: all, name: Everything}\n", field: "questionnaire.scales[1].id", at: "Everything", msg: `"all" is reserved`},
		{name: "duplicate scale id", old: "    - {id: E, name: Extraversion}\n", new: "    - {id: E, name: Extraversion}\n    - {id: E, name: Again}\n", field: "questionnaire.scales[1].id", at: "Again", msg: "duplicate scale id"},
		{name: "item key misspelt", old: "reversed: true", new: "revresed: true", field: "questionnaire.items[1].revresed", at: "revresed", msg: `did you mean "reversed"?`},
		{name: "item without text", old: "text: I listen., ", new: "", field: "questionnaire.items[1].text", at: "id: i2", msg: "missing"},
		{name: "bad on_error", old: "on_error: warn", new: "on_error: rase\n  cumulative: true", field: "run.on_error", at: "on_error", msg: `did you mean "raise"?`},
		{name: "cumulative with a normal prompt", old: "  type: chat\n  messages:\n    - role: system\n      content: \"{persona_description} {general_instruction}\"\n    - role: user\n      content: \"{question}\\n{answer_options}\"\n",
			new: "  type: normal\n  template: \"{question}\"\n", old2: "on_error: warn", new2: "cumulative: true", field: "run.cumulative", at: "cumulative", msg: "chat prompt"},
		{name: "negative concurrency", old: "max_concurrency: 4", new: "max_concurrency: -1", field: "run.max_concurrency", at: "max_concurrency: -1", msg: "negative"},
		{name: "bad call timeout", old: "on_error: warn", new: "call_timeout: soon", field: "run.call_timeout", at: "call_timeout", msg: `"30s"`},
		{name: "no models", old: "§models:\n|prompt:", new: "models: []\n", field: "models", at: "models: []", msg: "at least one model"},
		{name: "no items", old: "  items:\n    - {id: i1, text: I talk., scale: E}\n    - {id: i2, text: I listen., scale: E, reversed: true}\n", new: "  items: []\n", field: "questionnaire.items", at: "items: []", msg: "at least one item"},
		{name: "simulator fault rate", old: "name: test", new: "name: test\nsimulator:\n  latency: 300ms\n  faults: {rate_limit: 1.5}", field: "simulator.faults.rate_limit", at: "rate_limit", msg: "from 0 to 1"},
		{name: "simulator content_filter rate", old: "name: test", new: "name: test\nsimulator:\n  faults: {length: 0.1, content_filter: -0.5}", field: "simulator.faults.content_filter", at: "content_filter", msg: "from 0 to 1"},
		{name: "simulator outage negative start", old: "name: test", new: "name: test\nsimulator:\n  outage: {after: -1s, for: 90s}", field: "simulator.outage.after", at: "after", msg: "negative"},
		{name: "simulator outage without length", old: "name: test", new: "name: test\nsimulator:\n  outage: {after: 10s}", field: "simulator.outage.for", at: "outage:", msg: "positive duration"},
		{name: "simulator outage bad duration", old: "name: test", new: "name: test\nsimulator:\n  outage: {after: 10s, for: long}", field: "simulator.outage.for", at: "for:", msg: "want a duration"},
		{name: "simulator outage unknown kind", old: "name: test", new: "name: test\nsimulator:\n  outage: {for: 90s, kind: refused}", field: "simulator.outage.kind", at: "kind:", msg: `did you mean "refuse"?`},
		{name: "simulator outage bad status", old: "name: test", new: "name: test\nsimulator:\n  outage: {for: 90s, status: 404}", field: "simulator.outage.status", at: "status:", msg: "want one of [429 500 502 503 504]"},
		{name: "simulator outage refuse with status", old: "name: test", new: "name: test\nsimulator:\n  outage: {for: 90s, kind: refuse, status: 503}", field: "simulator.outage.status", at: "status:", msg: "no status"},
		{name: "simulator outage unknown key", old: "name: test", new: "name: test\nsimulator:\n  outage: {for: 90s, stauts: 503}", field: "simulator.outage.stauts", at: "stauts", msg: `did you mean "status"?`},
		{name: "simulator unknown key", old: "name: test", new: "name: test\nsimulator: {latency: 1s, rmp: 5}", field: "simulator.rmp", at: "rmp", msg: `did you mean "rpm"?`},
		{name: "bad seed", old: "seeds: [1, 2]", new: "seeds: [1, x]", field: "seeds[1]", at: "seeds:", msg: "numeric string"},
		{name: "duplicate seed", old: "seeds: [1, 2]", new: "seeds: [1, \"1\"]", field: "seeds[1]", at: "seeds:", msg: "duplicate seed"},
		{name: "negative budget", old: "name: test", new: "name: test\nbudget_usd: -1", field: "budget_usd", at: "budget_usd", msg: "negative"},
		{name: "budget too large", old: "name: test", new: "name: test\nbudget_usd: 1e7", field: "budget_usd", at: "budget_usd", msg: "less than $9223372"},
		{name: "budget not a number", old: "name: test", new: "name: test\nbudget_usd: .nan", field: "", at: "budget_usd", msg: "not a usable number"},
		{name: "budget below a picodollar", old: "name: test", new: "name: test\nbudget_usd: 1e-13", field: "budget_usd", at: "budget_usd", msg: "less than a picodollar"},
		{name: "models not a list", old: "§models:\n|prompt:", new: "models: gpt-4o\n", field: "models", at: "models: gpt", msg: "want a list"},
		{name: "yaml syntax error", old: "  name: q\n", new: "  name: [q\n", line: 0, msg: "not valid YAML"},
		{name: "missing persona CSV", old: "§personas:\n|questionnaire:", new: "personas: {file: people.csv}\n", field: "personas.file", at: "people.csv", msg: "cannot read", only: true},
		{name: "missing items CSV", old: "§  items:\n|run:", new: "  items: {file: items.csv}\n", field: "questionnaire.items.file", at: "items.csv", msg: "cannot read", only: true},
		{name: "persona CSV without id", old: "§personas:\n|questionnaire:", new: "personas: {file: people.csv}\n",
			files: map[string]string{"people.csv": "name,age\nAnn,30\n"}, field: "personas.file", file: "people.csv", line: 1, msg: "no id column"},
		{name: "duplicate persona in CSV", old: "§personas:\n|questionnaire:", new: "personas: {file: people.csv}\n",
			files: map[string]string{"people.csv": "id,name\na,Ann\nb,Bob\na,Al\n"}, field: "personas[2].id", file: "people.csv", line: 4, msg: "duplicate persona id"},
		{name: "items CSV bad keyed", old: "§  items:\n|run:", new: "  items: {file: items.csv}\n",
			files: map[string]string{"items.csv": "id,text,scale,keyed\n1,I talk.,E,+\n2,I listen.,E,?\n"}, field: "questionnaire.items[1].keyed", file: "items.csv", line: 3, msg: "want + or -"},
		{name: "items CSV unknown scale", old: "§  items:\n|run:", new: "  items: {file: items.csv}\n",
			files: map[string]string{"items.csv": "id,text,scale,keyed\n1,I talk.,E,+\n2,I listen.,N,-\n"}, field: "questionnaire.items[1].scale", file: "items.csv", line: 3, msg: "unknown scale"},
		{name: "items CSV unknown column", old: "§  items:\n|run:", new: "  items: {file: items.csv}\n",
			files: map[string]string{"items.csv": "id,question,scale\n1,I talk.,E\n"}, field: "questionnaire.items.file", file: "items.csv", line: 1, msg: `did you mean "text"?`},
		{name: "key in base_url query", old: "name: sim-model\n", new: "name: sim-model\n    base_url: \"https://api.example/v1?api_key=SECRET123\"\n",
			field: "models[1].base_url", at: "base_url", msg: `query parameter "api_key"`},
		{name: "key in base_url user info", old: "name: sim-model\n", new: "name: sim-model\n    base_url: \"https://me:SECRET123@api.example/v1\"\n",
			field: "models[1].base_url", at: "base_url", msg: "user info"},
		{name: "token in base_url", old: "name: sim-model\n", new: "name: sim-model\n    base_url: \"http://localhost:8080/v1?access_token=SECRET123\"\n",
			field: "models[1].base_url", at: "base_url", msg: `query parameter "access_token"`},
		{name: "framework key in base_url", doc: `{"name":"x","parameters":{"seeds":[1]},
"models":{"gemini":{"type":"google","name_or_path":"gemini-2.0-flash","base_url":"https://generativelanguage.googleapis.com/v1beta/openai/?key=SECRET123"}},
"demographic_profiles":{"a":{"attributes":{"name":"A"}}},
"questionnaire":{"name":"q","general_instruction":"Rate.","default_answer_options":{"1":{"text":"No","weight":1}},"instruction_items":[{"question":"Q?"}]}}`,
			field: "models.gemini.base_url", at: `"base_url"`, msg: `query parameter "key"`},
		{name: "framework api key", doc: `{"name":"x","parameters":{"seeds":[1]},
"models":{"gpt":{"type":"openai","name_or_path":"gpt-4o","api_key":"sk-123"}},
"demographic_profiles":{"a":{"attributes":{"name":"A"}}},
"questionnaire":{"name":"q","general_instruction":"Rate.","default_answer_options":{"1":{"text":"No","weight":1}},"instruction_items":[{"question":"Q?"}]}}`,
			field: "models.gpt.api_key", at: `"api_key"`, msg: "environment variable"},
		{name: "framework unknown key", doc: `{"name":"x","parameters":{"seeds":[1]},"model":{},
"models":{"gpt":{"type":"openai","name_or_path":"gpt-4o"}},
"demographic_profiles":{"a":{"attributes":{"name":"A"}}},
"questionnaire":{"name":"q","general_instruction":"Rate.","default_answer_options":{"1":{"text":"No","weight":1}},"instruction_items":[{"question":"Q?"}]}}`,
			field: "model", at: `"model"`, msg: `did you mean "models"?`},
		{name: "framework undeclared dimension", doc: `{"name":"x","parameters":{"seeds":[1]},
"models":{"gpt":{"type":"ollama","model":"qwen2.5"}},
"demographic_profiles":{"a":{"attributes":{"name":"A"}}},
"questionnaire":{"name":"q","general_instruction":"Rate.","attributes":{"dimension":{"1":"E"}},
 "default_answer_options":{"1":{"text":"No","weight":1}},
 "instruction_items":[{"question":"Q?","attributes":{"dimension":"1"}},
  {"question":"R?","attributes":{"dimension":"7"}}]}}`,
			field: "questionnaire.instruction_items[1].attributes.dimension", at: `"R?"`, msg: "unknown scale"},
		{name: "framework hf model", doc: `{"name":"x","parameters":{"seeds":[1]},
"models":{"llama":{"type":"huggingface","name_or_path":"meta/llama"}},
"demographic_profiles":{"a":{"attributes":{"name":"A"}}},
"questionnaire":{"name":"q","general_instruction":"Rate.","default_answer_options":{"1":{"text":"No","weight":1}},"instruction_items":[{"question":"Q?"}]}}`,
			field: "models.llama.type", at: `"huggingface"`, msg: "OpenAI-compatible server"},
		{name: "framework persona placeholder", doc: `{"name":"x","parameters":{"seeds":[1]},
"models":{"gpt":{"type":"openai","name_or_path":"gpt-4o"}},
"demographic_profiles":{"Optimistic Persona":{"attributes":{"name":"A"},
  "template":"{name} from {town}"}},
"questionnaire":{"name":"q","general_instruction":"Rate.","default_answer_options":{"1":{"text":"No","weight":1}},"instruction_items":[{"question":"Q?"}]}}`,
			field: `demographic_profiles["Optimistic Persona"].template`, at: `{town}`, msg: "unknown placeholder {town}"},
		{name: "framework missing instruction", doc: `{"name":"x","parameters":{"seeds":[1]},
"models":{"gpt":{"type":"openai","name_or_path":"gpt-4o"}},
"demographic_profiles":{"a":{"attributes":{"name":"A"}}},
"questionnaire":{"name":"q","default_answer_options":{"1":{"text":"No","weight":1}},"instruction_items":[{"question":"Q?"}]}}`,
			field: "questionnaire.general_instruction", at: `"questionnaire"`, msg: "missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc
			if doc == "" {
				doc = replace(t, baseSpec, tc.old, tc.new)
				if tc.old2 != "" {
					doc = replace(t, doc, tc.old2, tc.new2)
				}
			}
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Parse([]byte(doc), "spec.yaml", dir)
			var errs experiment.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, want Errors", err)
			}
			var got *experiment.Error
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Msg, tc.msg) {
					got = e
				}
			}
			if got == nil {
				t.Fatalf("no error at field %q with %q; got:\n%v", tc.field, tc.msg, err)
			}
			if tc.only && len(errs) != 1 {
				t.Errorf("%d errors, want only the one at %s:\n%v", len(errs), tc.field, err)
			}
			wantFile := "spec.yaml"
			if tc.file != "" {
				wantFile = filepath.Join(dir, tc.file)
			}
			if got.File != wantFile {
				t.Errorf("File = %q, want %q", got.File, wantFile)
			}
			want := tc.line
			if tc.at != "" {
				if tc.file != "" {
					want = lineOf(t, tc.files[tc.file], tc.at)
				} else {
					want = lineOf(t, doc, strings.SplitN(tc.at, "\n", 2)[0])
					if strings.Contains(tc.at, "\n") { // the line of a multi-line snippet
						want = strings.Count(doc[:strings.Index(doc, tc.at)], "\n") + 1
					}
				}
			}
			if want > 0 && got.Line != want {
				t.Errorf("Line = %d, want %d (%v)", got.Line, want, got)
			}
			if strings.Contains(err.Error(), "SECRET123") {
				t.Errorf("error prints the secret: %v", err)
			}
			if want > 0 && !strings.HasPrefix(got.Error(), wantFile+":") {
				t.Errorf("Error() = %q, want it to start with the file", got.Error())
			}
		})
	}
}

func TestCSVSyntaxError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.csv"), []byte("id,name\na,Ann\nb,Bob,extra\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := replace(t, baseSpec, "§personas:\n|questionnaire:", "personas: {file: p.csv}\n")
	_, err := Parse([]byte(doc), "spec.yaml", dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "p.csv")+":3:") {
		t.Errorf("Parse = %v, want an error at p.csv line 3", err)
	}
}
