package specfile

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/silicolab/silico/experiment"

	"github.com/silicolab/silico/suggest"
)

// The seed-000 framework's experiment JSON (shared/reference/rupsycho.md), converted to a Spec. Its keys are
// kept in error paths, so a user of that format reads "models.qwen.api_key", not "models[0]".

var (
	frameworkKeys      = []string{"name", "description", "parameters", "models", "prompt_template", "demographic_profiles", "questionnaire", "metadata", "run", "budget_usd", "simulator"}
	frameworkModelKeys = []string{"type", "name_or_path", "model", "base_url", "api_key", "api_key_env", "parameters", "max_concurrency", "rpm", "tpm", "burst", "price"}
	frameworkQKeys     = []string{"name", "general_instruction", "attributes", "default_answer_options", "instruction_items"}
	frameworkItemKeys  = []string{"id", "question", "reversed", "answer_options", "attributes"}
	frameworkDelimiter = ", "
)

// frameworkTypes maps the framework's model types to a provider, default base URL and key variable.
var frameworkTypes = map[string]struct{ provider, baseURL, keyEnv string }{
	"openai":   {experiment.ProviderOpenAI, "", ""},
	"ollama":   {experiment.ProviderOpenAI, "http://localhost:11434/v1", ""},
	"deepseek": {experiment.ProviderOpenAI, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"},
	"google":   {experiment.ProviderOpenAI, "https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY"},
	"sim":      {experiment.ProviderSim, "", ""},
}

var localTypes = []string{"huggingface", "hf", "hf_local", "hf_remote", "huggingface_local", "huggingface_remote", "transformers", "local"}

func (d *decoder) framework(root *node, s *experiment.Spec) {
	f := d.fields(root, "", frameworkKeys...)
	// The keys this project's format shares with the framework's.
	specKeys.only("name", "description", "budget_usd", "run", "simulator").apply(d, f, "", s)
	if p := f["parameters"]; p != nil {
		if pf := d.fields(p, "parameters", "seeds", "lazy_load_models"); pf != nil {
			s.Seeds = d.seeds(pf["seeds"], "parameters.seeds")
			d.mark("seeds", "parameters.seeds", pf["seeds"])
			if v := pf["lazy_load_models"]; v != nil {
				d.boolean(v, "parameters.lazy_load_models")
				d.noteAt(v, "parameters.lazy_load_models", "accepted and ignored: it loads local models one at a time, "+
					"and silico loads none (every model is called over HTTP)")
			}
		}
	}
	if m := f["models"]; m != nil {
		if m.kind != kindMap {
			d.errAt(m, "models", "want a mapping of model ids to models {type, name_or_path, base_url, parameters}, got %s", m.describe())
		} else {
			for i, k := range m.keys {
				path := child("models", k.str)
				res := index("models", len(s.Models))
				d.mark(res, path, m.vals[i])
				s.Models = append(s.Models, d.frameworkModel(m.vals[i], path, res, k.str))
			}
		}
	}
	if p := f["prompt_template"]; p != nil {
		s.Prompt = prompt(d, p, "prompt_template")
		d.mark("prompt", "prompt_template", p)
	}
	if p := f["demographic_profiles"]; p != nil {
		d.mark("personas", "demographic_profiles", p)
		if p.kind != kindMap {
			d.errAt(p, "demographic_profiles", "want a mapping of profile ids to profiles {attributes, template}, got %s", p.describe())
		} else {
			for i, k := range p.keys {
				path := child("demographic_profiles", k.str)
				d.mark(index("personas", len(s.Personas)), path, p.vals[i])
				s.Personas = append(s.Personas, persona(d, p.vals[i], path, k.str))
			}
		}
	} else {
		d.mark("personas", "demographic_profiles", root)
	}
	if q := f["questionnaire"]; q != nil {
		d.frameworkQuestionnaire(q, s)
	}
}

func (d *decoder) frameworkModel(n *node, path, res, id string) experiment.Model {
	f := d.fields(n, path, frameworkModelKeys...)
	m := experiment.Model{ID: id}
	if f == nil {
		return m
	}
	d.noSecret(f["api_key"], child(path, "api_key"))
	typ := d.str(f["type"], child(path, "type"))
	t, ok := frameworkTypes[typ]
	switch {
	case f["type"] == nil:
		d.errAt(n, child(path, "type"), "missing: want openai, ollama, deepseek, google or sim")
	case slices.Contains(localTypes, typ):
		d.errAt(f["type"], child(path, "type"), "type %q (a model run in-process) is not supported; serve it behind an OpenAI-compatible server (vLLM, TGI, Ollama) and use type \"openai\" with its base_url", typ)
	case !ok:
		d.errAt(f["type"], child(path, "type"), "unknown model type %q%s; want openai, ollama, deepseek, google or sim", typ, suggest.DidYouMean(typ, []string{"openai", "ollama", "deepseek", "google", "sim"}))
	}
	m.Provider, m.BaseURL, m.APIKeyEnv = t.provider, t.baseURL, t.keyEnv
	name, nameKey := f["name_or_path"], "name_or_path"
	if name == nil && f["model"] != nil {
		name, nameKey = f["model"], "model"
	}
	m.Name = d.str(name, child(path, nameKey))
	if name != nil {
		d.mark(res+".name", child(path, nameKey), name)
	} else {
		d.mark(res+".name", child(path, "name_or_path"), n)
	}
	if v := f["base_url"]; v != nil {
		m.BaseURL = d.str(v, child(path, "base_url"))
	}
	if v := f["api_key_env"]; v != nil {
		m.APIKeyEnv = d.str(v, child(path, "api_key_env"))
	}
	if p := f["parameters"]; p != nil {
		d.numPredict(p, child(path, "parameters"))
		m.Params = paramKeys.decode(d, p, child(path, "parameters"))
		d.mark(res+".params", child(path, "parameters"), p)
	}
	// The keys this project's format shares with the framework's.
	modelKeys.only("max_concurrency", "rpm", "tpm", "burst", "price").apply(d, f, path, &m)
	return m
}

func (d *decoder) frameworkQuestionnaire(n *node, s *experiment.Spec) {
	f := d.fields(n, "questionnaire", frameworkQKeys...)
	if f == nil {
		return
	}
	q := &s.Questionnaire
	q.Name = d.str(f["name"], "questionnaire.name")
	if v := f["general_instruction"]; v != nil {
		q.Instruction = d.str(v, "questionnaire.general_instruction")
	} else {
		d.errAt(n, "questionnaire.general_instruction", "missing: the instruction that fills {general_instruction}")
	}
	if a := f["attributes"]; a != nil {
		if a.kind != kindMap {
			d.errAt(a, "questionnaire.attributes", "want a mapping such as {\"dimension\": {\"1\": \"Extraversion\"}}, got %s", a.describe())
		} else if dim := a.get("dimension"); dim != nil {
			if dim.kind != kindMap {
				d.errAt(dim, "questionnaire.attributes.dimension", "want a mapping of dimension ids to names, got %s", dim.describe())
			} else {
				q.Scales = d.scales(dim, "questionnaire.attributes.dimension")
			}
			for i := range q.Scales {
				if l, ok := d.locs[index("questionnaire.attributes.dimension", i)]; ok {
					d.setLoc("questionnaire.scales"+"["+strconv.Itoa(i)+"]", l)
				}
			}
		}
	}
	if o := f["default_answer_options"]; o != nil {
		q.Options = *d.optionSet(o, "questionnaire.default_answer_options", "questionnaire.options", frameworkDelimiter)
	} else {
		q.Options.Delimiter = frameworkDelimiter
		d.mark("questionnaire.options", "questionnaire.default_answer_options", n)
	}
	items := f["instruction_items"]
	if items == nil {
		d.mark("questionnaire.items", "questionnaire.instruction_items", n)
	}
	d.mark("questionnaire.items", "questionnaire.instruction_items", items)
	for i, e := range d.list(items, "questionnaire.instruction_items", "items {question, reversed, answer_options, attributes}") {
		p := index("questionnaire.instruction_items", i)
		res := index("questionnaire.items", i)
		d.mark(res, p, e)
		it := experiment.Item{ID: strconv.Itoa(i + 1)}
		ff := d.fields(e, p, frameworkItemKeys...)
		if ff == nil {
			q.Items = append(q.Items, it)
			continue
		}
		if v, ok := ff["id"]; ok {
			it.ID = d.str(v, p+".id")
		}
		it.Text = d.str(ff["question"], p+".question")
		d.mark(res+".text", p+".question", ff["question"])
		if ff["question"] == nil {
			d.mark(res+".text", p+".question", e)
		}
		it.Reversed = d.boolean(ff["reversed"], p+".reversed")
		if a := ff["attributes"]; a != nil {
			if a.kind != kindMap {
				d.errAt(a, p+".attributes", "want a mapping such as {\"dimension\": \"1\"}, got %s", a.describe())
			} else if dim := a.get("dimension"); dim != nil {
				it.Scale = d.str(dim, p+".attributes.dimension")
				d.mark(res+".scale", p+".attributes.dimension", dim)
			}
		}
		if o := ff["answer_options"]; o != nil {
			it.Options = d.optionSet(o, p+".answer_options", res+".options", frameworkDelimiter)
		}
		q.Items = append(q.Items, it)
	}
	d.mark("questionnaire.instruction", "questionnaire.general_instruction", f["general_instruction"])
}

// numPredict reads Ollama's num_predict, which the framework's files set on ollama models, as max_tokens (what
// Ollama's OpenAI-compatible endpoint, which silico calls, takes for it), with a note; a num_predict of 0 or less
// (Ollama's "no limit", -1, or "fill the context", -2) sends none. Both keys at once are an error.
func (d *decoder) numPredict(params *node, path string) {
	np := params.get("num_predict")
	if np == nil {
		return
	}
	at := child(path, "num_predict")
	if params.get("max_tokens") != nil {
		d.errAt(np, at, "both num_predict and max_tokens are set; keep max_tokens, which num_predict stands for")
		params.drop([]string{"num_predict"})
		return
	}
	if np.kind != kindScalar || np.scalar != scalarInt {
		d.integer(np, at) // reports what is wrong with it
		params.drop([]string{"num_predict"})
		return
	}
	n := d.integer(np, at)
	if n <= 0 {
		d.noteAt(np, at, fmt.Sprintf("Ollama's num_predict %d (no limit) sends no max_tokens", n))
		params.drop([]string{"num_predict"})
		return
	}
	for _, k := range params.keys {
		if k.str == "num_predict" {
			k.str = "max_tokens"
		}
	}
	d.noteAt(np, at, fmt.Sprintf("read as max_tokens: %d, the completion cap Ollama's OpenAI-compatible endpoint takes for num_predict", n))
}
