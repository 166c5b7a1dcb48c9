package specfile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// tableProblems lists where tb and the json tags of T disagree: a row whose field has another json name, a
// field with a json tag and no row.
func tableProblems[T any](tb table[T]) []string {
	var zero T
	v := reflect.ValueOf(&zero).Elem()
	typ := v.Type()
	var out []string
	covered := map[int]bool{}
	for _, k := range tb {
		if k.at == nil {
			if !k.hidden {
				out = append(out, fmt.Sprintf("%s: row %q fills no field but is listed as accepted", typ.Name(), k.name))
			}
			continue
		}
		p := reflect.ValueOf(k.at(&zero))
		i := slices.IndexFunc(reflect.VisibleFields(typ), func(f reflect.StructField) bool {
			fa := v.FieldByIndex(f.Index).Addr()
			return fa.Pointer() == p.Pointer() && fa.Type() == p.Type()
		})
		if i < 0 {
			out = append(out, fmt.Sprintf("%s: row %q fills no field of %s", typ.Name(), k.name, typ.Name()))
			continue
		}
		covered[i] = true
		if name := jsonName(typ.Field(i)); name != k.name {
			out = append(out, fmt.Sprintf("%s: row %q fills field %s, whose json name is %q", typ.Name(), k.name, typ.Field(i).Name, name))
		}
	}
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() && jsonName(f) != "" && !covered[i] {
			out = append(out, fmt.Sprintf("%s: field %s (json %q) has no row in its table", typ.Name(), f.Name, jsonName(f)))
		}
	}
	return out
}

// jsonName is the name a field has in JSON; "" when it is never serialised.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

// TestTablesMatchJSONTags holds every table of the format to the json tags of its type, and checks that every
// struct type a Spec holds has a table: a field added to a type without its row (or a row without its field)
// fails here.
func TestTablesMatchJSONTags(t *testing.T) {
	checked := map[reflect.Type]bool{}
	check := func(typ reflect.Type, problems []string) {
		checked[typ] = true
		for _, p := range problems {
			t.Error(p)
		}
	}
	check(reflect.TypeFor[experiment.Spec](), tableProblems(specKeys))
	check(reflect.TypeFor[experiment.Model](), tableProblems(modelKeys))
	check(reflect.TypeFor[experiment.Params](), tableProblems(paramKeys))
	check(reflect.TypeFor[experiment.Price](), tableProblems(priceKeys))
	check(reflect.TypeFor[experiment.Prompt](), tableProblems(promptKeys))
	check(reflect.TypeFor[experiment.Message](), tableProblems(messageKeys))
	check(reflect.TypeFor[experiment.Persona](), tableProblems(personaKeys))
	check(reflect.TypeFor[experiment.Questionnaire](), tableProblems(questionnaireKeys))
	check(reflect.TypeFor[experiment.OptionSet](), tableProblems(optionSetKeys))
	check(reflect.TypeFor[experiment.Option](), tableProblems(optionKeys))
	check(reflect.TypeFor[experiment.Scale](), tableProblems(scaleKeys))
	check(reflect.TypeFor[experiment.Item](), tableProblems(itemKeys))
	check(reflect.TypeFor[experiment.RunSettings](), tableProblems(runKeys))
	check(reflect.TypeFor[experiment.SimulatorSettings](), tableProblems(simulatorKeys))
	check(reflect.TypeFor[experiment.SimulatorFaults](), tableProblems(faultKeys))
	check(reflect.TypeFor[experiment.SimulatorOutage](), tableProblems(outageKeys))
	check(reflect.TypeFor[experiment.SimulatorSnapshotChange](), tableProblems(snapshotKeys))
	check(reflect.TypeFor[experiment.ImageSettings](), tableProblems(imageKeys))
	check(reflect.TypeFor[experiment.EmbedSettings](), tableProblems(embedKeys))
	check(reflect.TypeFor[experiment.EmbedInput](), tableProblems(embedInputKeys))
	check(reflect.TypeFor[experiment.BatchSettings](), tableProblems(batchKeys))
	check(reflect.TypeFor[experiment.AnswerSettings](), tableProblems(answerKeys))
	check(reflect.TypeFor[experiment.OrderSettings](), tableProblems(orderKeys))
	check(reflect.TypeFor[experiment.Variant](), tableProblems(variantKeys))
	check(reflect.TypeFor[experiment.PromptVariant](), tableProblems(promptVariantKeys))
	check(reflect.TypeFor[experiment.SimulatorPositionBias](), tableProblems(positionBiasKeys))
	check(reflect.TypeFor[experiment.Reference](), tableProblems(referenceKeys))
	check(reflect.TypeFor[experiment.ReferenceCounts](), tableProblems(referenceCountKeys))
	check(reflect.TypeFor[experiment.ReferenceScale](), tableProblems(referenceScaleKeys))
	check(reflect.TypeFor[experiment.Respondents](), tableProblems(respondentKeys))
	check(reflect.TypeFor[experiment.AnalysisSettings](), tableProblems(analysisKeys))
	check(reflect.TypeFor[experiment.BootstrapSettings](), tableProblems(bootstrapKeys))

	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		if !checked[typ] {
			t.Errorf("%s: type %s has no table in the spec format", path, typ.Name())
			return
		}
		for i := range typ.NumField() {
			if f := typ.Field(i); jsonName(f) != "" {
				walk(f.Type, path+"."+jsonName(f))
			}
		}
	}
	walk(reflect.TypeFor[experiment.Spec](), "spec")
}

// The check above can fail: a table that lost a row, or has a row of another name, is reported.
func TestTableProblemsFindDrift(t *testing.T) {
	if p := tableProblems(runKeys.without("cache")); len(p) != 1 || !strings.Contains(p[0], `field Cache (json "cache") has no row`) {
		t.Errorf("a table without the cache row: %q, want the missing row reported", p)
	}
	renamed := slices.Clone(priceKeys)
	renamed[0].name = "input"
	if p := tableProblems(renamed); len(p) != 1 || !strings.Contains(p[0], `row "input" fills field InputPerMTok, whose json name is "input_per_mtok"`) {
		t.Errorf("a renamed row: %q, want it reported", p)
	}
}

// The JSON form of a resolved spec (what `starter validate --json` prints and the results store keeps) is a
// spec file: it decodes to the same spec, and to what decoding it with encoding/json would give.
func TestResolvedJSONDecodesToItself(t *testing.T) {
	for name, doc := range map[string]string{
		"every section": `name: "every <section> & key"
description: "tab\there, line\u2028separator, quote \" and backslash \\ and emoji 🙂"
seeds: [3, "9007199254740993"]
budget_usd: 12.5
models:
  - {id: a, name: m, base_url: "http://localhost:8080/v1", api_key_env: KEY, max_concurrency: 2, rpm: 60, tpm: 6000,
     burst: 0.5, cache: read, params: {temperature: 0, top_p: 0.9, max_tokens: 20, stop: ["\n", "END"]},
     price: {input_per_mtok: 0.15, output_per_mtok: 0.6}}
  - {name: s, provider: sim}
prompt: {type: normal, template: "{{literal}} {question} <{answer_options}>"}
personas:
  - {id: p, attributes: {name: Ann, age: 30}, template: "{name} & {age}"}
questionnaire:
  name: q
  instruction: Rate.
  options: {options: [{id: "1", text: No, weight: 0}, {text: Yes, ignored_for_scale: true}], delimiter: " | ", prepend_delimiter: true}
  scales: {E: Extraversion}
  items: [{id: i1, text: Q1, scale: E, reversed: true, options: [A, B]}, Q2]
run: {max_concurrency: 3, max_parallel_passes: 1, on_error: raise, call_timeout: 90s, max_attempts: 4,
      stall_timeout: 1h, chunk_size: 10, cache: write}
simulator: {latency: 20ms, jitter: 5ms, rpm: 100, tpm: 1000, faults: {rate_limit: 0.1, quota: 0.01, server_500: 0.02,
            server_503: 0.03, hang: 0.04, drop: 0.05, malformed: 0.06, length: 0.07, content_filter: 0.08,
            fail_cells: [a/3/i1/p]},
            outage: {after: 10s, for: 90s, kind: html, status: 504}}
`,
		"items with their own options only": `name: own
models: [{name: m}]
personas: [{id: p}]
questionnaire: {items: [{text: Q, options: [A, B]}]}
`,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Parse([]byte(doc), "spec.yaml", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			saved, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseInput(saved, "saved spec")
			if err != nil {
				t.Fatalf("the resolved form does not decode: %v\n%s", err, saved)
			}
			if b, _ := json.Marshal(again); string(b) != string(saved) {
				t.Errorf("decoded resolved form differs:\n%s\nwant\n%s", b, saved)
			}
			var raw experiment.Spec
			if err := json.Unmarshal(saved, &raw); err != nil {
				t.Fatal(err)
			}
			raw.ApplyDefaults()
			if b, _ := json.Marshal(raw); string(b) != string(saved) {
				t.Errorf("encoding/json reads the resolved form otherwise:\n%s\nwant\n%s", b, saved)
			}
			if again.Hash() != s.Hash() {
				t.Errorf("Hash %q after the round trip, want %q", again.Hash(), s.Hash())
			}
		})
	}
}

// The messages built from the tables list the keys as the format documents them.
func TestTableMessages(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{modelKeys.what("models"), "models {id, name, provider, ...}"},
		{itemKeys.what("items"), "items {id, text, scale, ...}"},
		{personaKeys.what("personas"), "personas {id, attributes, template, images}"},
		{strings.Join(personaMapKeys.names(nil), ","), "attributes,template,images"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	// api_key is refused with its own message, and listed among the accepted keys only where it is written.
	_, err := Parse([]byte(strings.Replace(baseSpec, "api_key_env: OPENAI_API_KEY", "api_key: sk-1\n    rmp: 1", 1)), "spec.yaml", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "accepted keys: id, name, provider, base_url, api_key_env, params, max_concurrency, rpm, tpm, burst, price, cache, image_transport, batch, answer, api_key") || strings.Count(err.Error(), "api_key_env, e.g.") != 1 {
		t.Errorf("a model with api_key and an unknown key: %v", err)
	}
	_, err = Parse([]byte(strings.Replace(baseSpec, "api_key_env: OPENAI_API_KEY", "rmp: 1", 1)), "spec.yaml", t.TempDir())
	if err == nil || !strings.HasSuffix(err.Error(), "burst, price, cache, image_transport, batch, answer") {
		t.Errorf("a model with an unknown key: %v", err)
	}
}
