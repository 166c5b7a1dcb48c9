package specfile

import (
	"encoding/json"
	"strconv"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/usage"
)

// The tables of this project's format: one per section, one row per key. A key's name is the json tag of the
// field it fills, so the JSON form of a resolved Spec is itself a spec file (TestTablesMatchJSONTags holds every
// table to its type). Rows are in the order of the type's fields, which is the order errors list the keys in.

var specKeys = table[experiment.Spec]{
	field("name", func(s *experiment.Spec) *string { return &s.Name }, (*decoder).str),
	field("description", func(s *experiment.Spec) *string { return &s.Description }, (*decoder).str),
	field("kind", func(s *experiment.Spec) *string { return &s.Kind }, (*decoder).str),
	field("seeds", func(s *experiment.Spec) *[]int64 { return &s.Seeds }, (*decoder).seeds),
	field("models", func(s *experiment.Spec) *[]experiment.Model { return &s.Models }, listOf(modelKeys, "models")),
	field("prompt", func(s *experiment.Spec) *experiment.Prompt { return &s.Prompt }, prompt),
	field("prompt_variants", func(s *experiment.Spec) *[]experiment.PromptVariant { return &s.PromptVariants }, promptVariants),
	field("personas", func(s *experiment.Spec) *[]experiment.Persona { return &s.Personas }, personas),
	field("questionnaire", func(s *experiment.Spec) *experiment.Questionnaire { return &s.Questionnaire }, questionnaire),
	field("run", func(s *experiment.Spec) *experiment.RunSettings { return &s.Run }, runKeys.decode),
	field("budget_usd", func(s *experiment.Spec) *usage.USD { return &s.BudgetUSD }, (*decoder).dollars),
	field("simulator", func(s *experiment.Spec) **experiment.SimulatorSettings { return &s.Simulator }, simulatorKeys.decodePtr),
	field("image", func(s *experiment.Spec) *experiment.ImageSettings { return &s.Image }, imageKeys.decode),
	field("embed", func(s *experiment.Spec) **experiment.EmbedSettings { return &s.Embed }, embed),
	field("reference", func(s *experiment.Spec) **experiment.Reference { return &s.Reference }, reference),
	field("analysis", func(s *experiment.Spec) *experiment.AnalysisSettings { return &s.Analysis }, analysisKeys.decode),
}

var analysisKeys = table[experiment.AnalysisSettings]{
	field("bootstrap", func(a *experiment.AnalysisSettings) *experiment.BootstrapSettings { return &a.Bootstrap }, bootstrapKeys.decode),
}

var bootstrapKeys = table[experiment.BootstrapSettings]{
	field("samples", func(b *experiment.BootstrapSettings) **int { return &b.Samples }, (*decoder).integerPtr),
	field("seed", func(b *experiment.BootstrapSettings) **int64 { return &b.Seed }, (*decoder).int64Ptr),
}

// referenceKeys are the keys of the human reference. A spec file gives file and groups; form, counts and
// scales are what the starter reads from the file (see referenceFile), which a resolved spec carries.
var referenceKeys = table[experiment.Reference]{
	field("file", func(r *experiment.Reference) *string { return &r.File }, (*decoder).str),
	field("groups", func(r *experiment.Reference) *[]string { return &r.Groups }, (*decoder).strings),
	field("form", func(r *experiment.Reference) *string { return &r.Form }, (*decoder).str),
	field("counts", func(r *experiment.Reference) *[]experiment.ReferenceCounts { return &r.Counts }, listOf(referenceCountKeys, "reference counts")),
	field("scales", func(r *experiment.Reference) *[]experiment.ReferenceScale { return &r.Scales }, listOf(referenceScaleKeys, "reference scales")),
	field("weight", func(r *experiment.Reference) *string { return &r.Weight }, (*decoder).str),
	field("respondents", func(r *experiment.Reference) **experiment.Respondents { return &r.Respondents }, respondentKeys.decodePtr),
}

var respondentKeys = table[experiment.Respondents]{
	field("items", func(r *experiment.Respondents) *[]string { return &r.Items }, (*decoder).strings),
	field("answers", func(r *experiment.Respondents) *[][]int { return &r.Answers }, rowsOf((*decoder).integers, "rows of whole numbers")),
	field("groups", func(r *experiment.Respondents) *[][]string { return &r.Groups }, rowsOf((*decoder).strings, "rows of strings")),
	field("weights", func(r *experiment.Respondents) *[]float64 { return &r.Weights }, (*decoder).numbers),
}

// rowsOf decodes a list of lists, each with row.
func rowsOf[T any](row func(*decoder, *node, string) []T, what string) func(*decoder, *node, string) [][]T {
	return func(d *decoder, n *node, path string) [][]T {
		var out [][]T
		for i, e := range d.list(n, path, what) {
			out = append(out, row(d, e, index(path, i)))
		}
		return out
	}
}

var referenceCountKeys = table[experiment.ReferenceCounts]{
	field("item", func(c *experiment.ReferenceCounts) *string { return &c.Item }, (*decoder).str),
	field("group", func(c *experiment.ReferenceCounts) *string { return &c.Group }, (*decoder).str),
	field("counts", func(c *experiment.ReferenceCounts) *[]int { return &c.Counts }, (*decoder).integers),
}

var referenceScaleKeys = table[experiment.ReferenceScale]{
	field("scale", func(c *experiment.ReferenceScale) *string { return &c.Scale }, (*decoder).str),
	field("group", func(c *experiment.ReferenceScale) *string { return &c.Group }, (*decoder).str),
	field("n", func(c *experiment.ReferenceScale) *int { return &c.Respondents }, (*decoder).integer),
	field("n_items_used", func(c *experiment.ReferenceScale) *int { return &c.ItemsUsed }, (*decoder).integer),
	field("alpha", func(c *experiment.ReferenceScale) **float64 { return &c.Alpha }, (*decoder).numberPtr),
	field("omega_total", func(c *experiment.ReferenceScale) **float64 { return &c.OmegaTotal }, (*decoder).numberPtr),
}

// reference reads the reference section. A file that is named but not yet read (no counts inlined) is read
// once the whole spec is decoded: its item and option ids are resolved against the questionnaire.
func reference(d *decoder, n *node, path string) *experiment.Reference {
	r := referenceKeys.decodePtr(d, n, path)
	if r != nil && r.File != "" && len(r.Counts) == 0 && len(r.Scales) == 0 && r.Respondents == nil {
		d.referenceNode = n
	}
	return r
}

var embedKeys = table[experiment.EmbedSettings]{
	field("texts", func(e *experiment.EmbedSettings) *string { return &e.Texts }, (*decoder).str),
	field("file", func(e *experiment.EmbedSettings) *string { return &e.File }, (*decoder).str),
	field("column", func(e *experiment.EmbedSettings) *string { return &e.Column }, (*decoder).str),
	field("id_column", func(e *experiment.EmbedSettings) *string { return &e.IDColumn }, (*decoder).str),
	field("inputs", func(e *experiment.EmbedSettings) *[]experiment.EmbedInput { return &e.Inputs }, listOf(embedInputKeys, "embed inputs")),
	field("max_inputs_per_request", func(e *experiment.EmbedSettings) *int { return &e.MaxInputsPerRequest }, (*decoder).integer),
	field("max_tokens_per_request", func(e *experiment.EmbedSettings) *int { return &e.MaxTokensPerRequest }, (*decoder).integer),
	field("dimensions", func(e *experiment.EmbedSettings) *int { return &e.Dimensions }, (*decoder).integer),
}

var embedInputKeys = table[experiment.EmbedInput]{
	field("id", func(e *experiment.EmbedInput) *string { return &e.ID }, (*decoder).str),
	field("text", func(e *experiment.EmbedInput) *string { return &e.Text }, (*decoder).str),
}

// embed reads the embed section; texts: csv with a file reads the file's texts into inputs.
func embed(d *decoder, n *node, path string) *experiment.EmbedSettings {
	e := embedKeys.decodePtr(d, n, path)
	if e != nil && e.Texts == experiment.EmbedCSV && e.File != "" && len(e.Inputs) == 0 {
		e.Inputs = d.embedCSV(n.get("file"), e.Column, e.IDColumn)
	}
	return e
}

var modelKeys = table[experiment.Model]{
	field("id", func(m *experiment.Model) *string { return &m.ID }, (*decoder).str),
	field("name", func(m *experiment.Model) *string { return &m.Name }, (*decoder).str),
	field("provider", func(m *experiment.Model) *string { return &m.Provider }, (*decoder).str),
	field("base_url", func(m *experiment.Model) *string { return &m.BaseURL }, (*decoder).str),
	field("api_key_env", func(m *experiment.Model) *string { return &m.APIKeyEnv }, (*decoder).str),
	field("params", func(m *experiment.Model) *experiment.Params { return &m.Params }, paramKeys.decode),
	field("max_concurrency", func(m *experiment.Model) *int { return &m.MaxConcurrency }, (*decoder).integer),
	field("rpm", func(m *experiment.Model) *int { return &m.RPM }, (*decoder).integer),
	field("tpm", func(m *experiment.Model) *int { return &m.TPM }, (*decoder).integer),
	field("burst", func(m *experiment.Model) *float64 { return &m.Burst }, (*decoder).number),
	field("price", func(m *experiment.Model) **experiment.Price { return &m.Price }, priceKeys.decodePtr),
	field("cache", func(m *experiment.Model) *experiment.CachePolicy { return &m.Cache }, text[experiment.CachePolicy]),
	field("image_transport", func(m *experiment.Model) *experiment.ImageTransport { return &m.ImageTransport }, text[experiment.ImageTransport]),
	field("batch", func(m *experiment.Model) **experiment.BatchSettings { return &m.Batch }, batchKeys.decodePtr),
	field("answer", func(m *experiment.Model) **experiment.AnswerSettings { return &m.Answer }, answerKeys.decodePtr),
	refused[experiment.Model]("api_key", (*decoder).noSecret),
}

var paramKeys = table[experiment.Params]{
	field("temperature", func(p *experiment.Params) **float64 { return &p.Temperature }, (*decoder).numberPtr),
	field("top_p", func(p *experiment.Params) **float64 { return &p.TopP }, (*decoder).numberPtr),
	field("max_tokens", func(p *experiment.Params) *int { return &p.MaxTokens }, (*decoder).integer),
	field("stop", func(p *experiment.Params) *[]string { return &p.Stop }, (*decoder).strings),
	field("presence_penalty", func(p *experiment.Params) **float64 { return &p.PresencePenalty }, (*decoder).numberPtr),
	field("frequency_penalty", func(p *experiment.Params) **float64 { return &p.FrequencyPenalty }, (*decoder).numberPtr),
	field("logit_bias", func(p *experiment.Params) *map[string]int { return &p.LogitBias }, (*decoder).logitBias),
	field("reasoning_effort", func(p *experiment.Params) *string { return &p.ReasoningEffort }, (*decoder).str),
	field("max_completion_tokens", func(p *experiment.Params) *int { return &p.MaxCompletionTokens }, (*decoder).integer),
	field("logprobs", func(p *experiment.Params) *bool { return &p.Logprobs }, (*decoder).boolean),
	field("top_logprobs", func(p *experiment.Params) **int { return &p.TopLogprobs }, (*decoder).integerPtr),
	field("response_format", func(p *experiment.Params) *json.RawMessage { return &p.ResponseFormat }, (*decoder).jsonValue),
	field("n", func(p *experiment.Params) *int { return &p.N }, (*decoder).integer),
	field("extra", func(p *experiment.Params) *map[string]json.RawMessage { return &p.Extra }, (*decoder).jsonMap),
}

var answerKeys = table[experiment.AnswerSettings]{
	field("mode", func(a *experiment.AnswerSettings) *experiment.AnswerMode { return &a.Mode }, text[experiment.AnswerMode]),
	field("logprobs", func(a *experiment.AnswerSettings) *bool { return &a.Logprobs }, (*decoder).boolean),
	field("top_logprobs", func(a *experiment.AnswerSettings) *int { return &a.TopLogprobs }, (*decoder).integer),
	field("prefix", func(a *experiment.AnswerSettings) *string { return &a.Prefix }, (*decoder).str),
	field("reason", func(a *experiment.AnswerSettings) *bool { return &a.Reason }, (*decoder).boolean),
	field("modes", func(a *experiment.AnswerSettings) *[]experiment.AnswerMode { return &a.Modes }, answerModes),
}

var priceKeys = table[experiment.Price]{
	field("input_per_mtok", func(p *experiment.Price) *float64 { return &p.InputPerMTok }, (*decoder).number),
	field("output_per_mtok", func(p *experiment.Price) *float64 { return &p.OutputPerMTok }, (*decoder).number),
	field("batch_discount", func(p *experiment.Price) **float64 { return &p.BatchDiscount }, (*decoder).numberPtr),
	field("batch_input_per_mtok", func(p *experiment.Price) **float64 { return &p.BatchInputPerMTok }, (*decoder).numberPtr),
	field("batch_output_per_mtok", func(p *experiment.Price) **float64 { return &p.BatchOutputPerMTok }, (*decoder).numberPtr),
}

var batchKeys = table[experiment.BatchSettings]{
	field("mode", func(b *experiment.BatchSettings) *experiment.BatchMode { return &b.Mode }, text[experiment.BatchMode]),
	field("max_requests", func(b *experiment.BatchSettings) *int { return &b.MaxRequests }, (*decoder).integer),
	field("max_bytes", func(b *experiment.BatchSettings) *int { return &b.MaxBytes }, (*decoder).integer),
	field("poll_every", func(b *experiment.BatchSettings) *experiment.Duration { return &b.PollEvery }, (*decoder).duration),
	field("on_expired", func(b *experiment.BatchSettings) *experiment.OnExpired { return &b.OnExpired }, text[experiment.OnExpired]),
	field("keep_files", func(b *experiment.BatchSettings) *bool { return &b.KeepFiles }, (*decoder).boolean),
}

var promptKeys = table[experiment.Prompt]{
	field("type", func(p *experiment.Prompt) *string { return &p.Type }, (*decoder).str),
	field("template", func(p *experiment.Prompt) *string { return &p.Template }, (*decoder).str),
	field("messages", func(p *experiment.Prompt) *[]experiment.Message { return &p.Messages }, messages),
}

var messageKeys = table[experiment.Message]{
	field("role", func(m *experiment.Message) *string { return &m.Role }, (*decoder).str),
	field("content", func(m *experiment.Message) *string { return &m.Content }, (*decoder).str),
}

var personaKeys = table[experiment.Persona]{
	field("id", func(p *experiment.Persona) *string { return &p.ID }, (*decoder).str),
	field("attributes", func(p *experiment.Persona) *map[string]string { return &p.Attributes }, (*decoder).attributes),
	field("template", func(p *experiment.Persona) *string { return &p.Template }, (*decoder).str),
	field("images", func(p *experiment.Persona) *[]string { return &p.Images }, (*decoder).images),
	imageAlias(func(p *experiment.Persona) *[]string { return &p.Images }),
}

// personaMapKeys are the keys of a persona written as a mapping value: its id is its key.
var personaMapKeys = personaKeys.without("id")

var questionnaireKeys = table[experiment.Questionnaire]{
	field("name", func(q *experiment.Questionnaire) *string { return &q.Name }, (*decoder).str),
	field("instruction", func(q *experiment.Questionnaire) *string { return &q.Instruction }, (*decoder).str),
	field("options", func(q *experiment.Questionnaire) *experiment.OptionSet { return &q.Options }, options),
	field("scales", func(q *experiment.Questionnaire) *[]experiment.Scale { return &q.Scales }, (*decoder).scales),
	field("items", func(q *experiment.Questionnaire) *[]experiment.Item { return &q.Items }, items),
	field("order", func(q *experiment.Questionnaire) **experiment.OrderSettings { return &q.Order }, orderKeys.decodePtr),
}

var orderKeys = table[experiment.OrderSettings]{
	field("mode", func(o *experiment.OrderSettings) *experiment.OrderMode { return &o.Mode }, text[experiment.OrderMode]),
	field("pin", func(o *experiment.OrderSettings) *[]string { return &o.Pin }, (*decoder).strings),
	field("seed", func(o *experiment.OrderSettings) **int64 { return &o.Seed }, (*decoder).seedPtr),
}

var optionSetKeys = table[experiment.OptionSet]{
	// optionSet reads the options itself: it knows their three forms and where their positions go.
	handled("options", func(o *experiment.OptionSet) *[]experiment.Option { return &o.Options }),
	field("delimiter", func(o *experiment.OptionSet) *string { return &o.Delimiter }, (*decoder).str),
	field("prepend_delimiter", func(o *experiment.OptionSet) *bool { return &o.PrependDelimiter }, (*decoder).boolean),
}

var optionKeys = table[experiment.Option]{
	field("id", func(o *experiment.Option) *string { return &o.ID }, (*decoder).str),
	field("text", func(o *experiment.Option) *string { return &o.Text }, (*decoder).str),
	field("weight", func(o *experiment.Option) *int { return &o.Weight }, (*decoder).integer),
	field("ignored_for_scale", func(o *experiment.Option) *bool { return &o.IgnoredForScale }, (*decoder).boolean),
}

var scaleKeys = table[experiment.Scale]{
	field("id", func(s *experiment.Scale) *string { return &s.ID }, (*decoder).str),
	field("name", func(s *experiment.Scale) *string { return &s.Name }, (*decoder).str),
}

var itemKeys = table[experiment.Item]{
	field("id", func(it *experiment.Item) *string { return &it.ID }, (*decoder).str),
	field("text", func(it *experiment.Item) *string { return &it.Text }, (*decoder).str),
	field("scale", func(it *experiment.Item) *string { return &it.Scale }, (*decoder).str),
	field("reversed", func(it *experiment.Item) *bool { return &it.Reversed }, (*decoder).boolean),
	field("options", func(it *experiment.Item) **experiment.OptionSet { return &it.Options }, itemOptions),
	field("order", func(it *experiment.Item) **experiment.OrderSettings { return &it.Order }, orderKeys.decodePtr),
	field("images", func(it *experiment.Item) *[]string { return &it.Images }, (*decoder).images),
	imageAlias(func(it *experiment.Item) *[]string { return &it.Images }),
	field("variants", func(it *experiment.Item) *[]experiment.Variant { return &it.Variants }, listOf(variantKeys, "variants")),
}

var variantKeys = table[experiment.Variant]{
	field("id", func(v *experiment.Variant) *string { return &v.ID }, (*decoder).str),
	field("text", func(v *experiment.Variant) *string { return &v.Text }, (*decoder).str),
	field("reversed", func(v *experiment.Variant) *bool { return &v.Reversed }, (*decoder).boolean),
}

var promptVariantKeys = table[experiment.PromptVariant]{
	field("id", func(p *experiment.PromptVariant) *string { return &p.ID }, (*decoder).str),
	field("type", func(p *experiment.PromptVariant) *string { return &p.Type }, (*decoder).str),
	field("template", func(p *experiment.PromptVariant) *string { return &p.Template }, (*decoder).str),
	field("messages", func(p *experiment.PromptVariant) *[]experiment.Message { return &p.Messages }, messages),
}

var runKeys = table[experiment.RunSettings]{
	field("max_concurrency", func(r *experiment.RunSettings) *int { return &r.MaxConcurrency }, (*decoder).integer),
	field("max_parallel_passes", func(r *experiment.RunSettings) *int { return &r.MaxParallelPasses }, (*decoder).integer),
	field("on_error", func(r *experiment.RunSettings) *string { return &r.OnError }, (*decoder).str),
	field("cumulative", func(r *experiment.RunSettings) *bool { return &r.Cumulative }, (*decoder).boolean),
	field("seed_per_cell", func(r *experiment.RunSettings) **bool { return &r.SeedPerCell }, (*decoder).booleanPtr),
	field("call_timeout", func(r *experiment.RunSettings) *experiment.Duration { return &r.CallTimeout }, (*decoder).duration),
	field("max_attempts", func(r *experiment.RunSettings) *int { return &r.MaxAttempts }, (*decoder).integer),
	field("stall_timeout", func(r *experiment.RunSettings) *experiment.Duration { return &r.StallTimeout }, (*decoder).duration),
	field("chunk_size", func(r *experiment.RunSettings) *int { return &r.ChunkSize }, (*decoder).integer),
	field("cache", func(r *experiment.RunSettings) *experiment.CachePolicy { return &r.Cache }, text[experiment.CachePolicy]),
	field("image_transport", func(r *experiment.RunSettings) *experiment.ImageTransport { return &r.ImageTransport }, text[experiment.ImageTransport]),
	field("batch", func(r *experiment.RunSettings) **experiment.BatchSettings { return &r.Batch }, batchKeys.decodePtr),
	field("answer", func(r *experiment.RunSettings) **experiment.AnswerSettings { return &r.Answer }, answerKeys.decodePtr),
}

var simulatorKeys = table[experiment.SimulatorSettings]{
	field("latency", func(s *experiment.SimulatorSettings) *experiment.Duration { return &s.Latency }, (*decoder).duration),
	field("jitter", func(s *experiment.SimulatorSettings) *experiment.Duration { return &s.Jitter }, (*decoder).duration),
	field("rpm", func(s *experiment.SimulatorSettings) *int { return &s.RPM }, (*decoder).integer),
	field("tpm", func(s *experiment.SimulatorSettings) *int { return &s.TPM }, (*decoder).integer),
	field("faults", func(s *experiment.SimulatorSettings) *experiment.SimulatorFaults { return &s.Faults }, faultKeys.decode),
	field("outage", func(s *experiment.SimulatorSettings) **experiment.SimulatorOutage { return &s.Outage }, outageKeys.decodePtr),
	field("batch_time", func(s *experiment.SimulatorSettings) *experiment.Duration { return &s.BatchTime }, (*decoder).duration),
	field("batch_enqueued_tokens", func(s *experiment.SimulatorSettings) *int { return &s.BatchEnqueuedTokens }, (*decoder).integer),
	field("sampling", func(s *experiment.SimulatorSettings) *string { return &s.Sampling }, (*decoder).str),
	field("served_model", func(s *experiment.SimulatorSettings) *string { return &s.ServedModel }, (*decoder).str),
	field("system_fingerprint", func(s *experiment.SimulatorSettings) *string { return &s.SystemFingerprint }, (*decoder).str),
	field("snapshot_change", func(s *experiment.SimulatorSettings) **experiment.SimulatorSnapshotChange { return &s.SnapshotChange }, snapshotKeys.decodePtr),
	field("position_bias", func(s *experiment.SimulatorSettings) **experiment.SimulatorPositionBias { return &s.PositionBias }, positionBiasKeys.decodePtr),
	field("preferences", func(s *experiment.SimulatorSettings) *map[string]float64 { return &s.Preferences }, (*decoder).numberMap),
}

var snapshotKeys = table[experiment.SimulatorSnapshotChange]{
	field("from_seed", func(c *experiment.SimulatorSnapshotChange) *int { return &c.FromSeed }, (*decoder).integer),
	field("served_model", func(c *experiment.SimulatorSnapshotChange) *string { return &c.ServedModel }, (*decoder).str),
	field("system_fingerprint", func(c *experiment.SimulatorSnapshotChange) *string { return &c.SystemFingerprint }, (*decoder).str),
}

var positionBiasKeys = table[experiment.SimulatorPositionBias]{
	field("position", func(b *experiment.SimulatorPositionBias) *string { return &b.Position }, (*decoder).str),
	field("strength", func(b *experiment.SimulatorPositionBias) *float64 { return &b.Strength }, (*decoder).number),
}

var outageKeys = table[experiment.SimulatorOutage]{
	field("after", func(o *experiment.SimulatorOutage) *experiment.Duration { return &o.After }, (*decoder).duration),
	field("for", func(o *experiment.SimulatorOutage) *experiment.Duration { return &o.For }, (*decoder).duration),
	field("kind", func(o *experiment.SimulatorOutage) *string { return &o.Kind }, (*decoder).str),
	field("status", func(o *experiment.SimulatorOutage) *int { return &o.Status }, (*decoder).integer),
}

var faultKeys = table[experiment.SimulatorFaults]{
	field("rate_limit", func(f *experiment.SimulatorFaults) *float64 { return &f.RateLimit }, (*decoder).number),
	field("quota", func(f *experiment.SimulatorFaults) *float64 { return &f.Quota }, (*decoder).number),
	field("server_500", func(f *experiment.SimulatorFaults) *float64 { return &f.Server500 }, (*decoder).number),
	field("server_503", func(f *experiment.SimulatorFaults) *float64 { return &f.Server503 }, (*decoder).number),
	field("hang", func(f *experiment.SimulatorFaults) *float64 { return &f.Hang }, (*decoder).number),
	field("drop", func(f *experiment.SimulatorFaults) *float64 { return &f.Drop }, (*decoder).number),
	field("malformed", func(f *experiment.SimulatorFaults) *float64 { return &f.Malformed }, (*decoder).number),
	field("length", func(f *experiment.SimulatorFaults) *float64 { return &f.Length }, (*decoder).number),
	field("content_filter", func(f *experiment.SimulatorFaults) *float64 { return &f.ContentFilter }, (*decoder).number),
	field("fail_cells", func(f *experiment.SimulatorFaults) *[]string { return &f.FailCells }, (*decoder).strings),
}

// noSecret rejects an API key written into the spec.
func (d *decoder) noSecret(n *node, path string) {
	if n != nil {
		d.errAt(n, path, "an API key may not be written in the spec (it would end up in workflow history and logs); "+
			"put it in an environment variable of the worker and name that variable with api_key_env, e.g. api_key_env: OPENAI_API_KEY")
	}
}

// prompt reads a prompt; without a type, a template makes it a normal prompt and messages a chat prompt.
func prompt(d *decoder, n *node, path string) experiment.Prompt {
	var p experiment.Prompt
	if promptKeys.into(d, n, path, &p) == nil {
		return p
	}
	if p.Type == "" {
		if p.Template != "" {
			p.Type = experiment.PromptNormal
		} else {
			p.Type = experiment.PromptChat
		}
	}
	return p
}

// promptVariants reads the prompt variants; a variant without a type takes it from its keys, as prompt does.
func promptVariants(d *decoder, n *node, path string) []experiment.PromptVariant {
	out := listOf(promptVariantKeys, "prompt variants")(d, n, path)
	for i := range out {
		if out[i].Type == "" {
			out[i].Type = experiment.PromptChat
			if out[i].Template != "" {
				out[i].Type = experiment.PromptNormal
			}
		}
	}
	return out
}

// messages reads chat messages; an entry that is not a mapping is reported and left out.
func messages(d *decoder, n *node, path string) []experiment.Message {
	var out []experiment.Message
	for i, e := range d.list(n, path, messageKeys.what("messages")) {
		if m := messageKeys.decodePtr(d, e, index(path, i)); m != nil {
			out = append(out, *m)
		}
	}
	return out
}

// personas reads the personas in any accepted form: a list, a mapping id → persona in file order, or {file,
// template} naming a CSV file.
func personas(d *decoder, n *node, path string) []experiment.Persona {
	if n.kind == kindMap && n.get("file") != nil {
		f := d.fields(n, path, "file", "template")
		if f == nil {
			return nil
		}
		return d.personaCSV(f["file"], d.str(f["template"], child(path, "template")))
	}
	var out []experiment.Persona
	if n.kind == kindMap { // id → persona, in file order
		for i, k := range n.keys {
			p := persona(d, n.vals[i], child(path, k.str), k.str)
			d.mark(index(path, len(out)), child(path, k.str), n.vals[i])
			out = append(out, p)
		}
		return out
	}
	for i, e := range d.list(n, path, personaKeys.what("personas")) {
		p := persona(d, e, index(path, i), "")
		if p.ID == "" {
			p.ID = strconv.Itoa(i + 1)
		}
		out = append(out, p)
	}
	return out
}

// persona reads one persona; id is its key when it is a mapping value, "" in a list.
func persona(d *decoder, n *node, path, id string) experiment.Persona {
	keys := personaKeys
	if id != "" {
		keys = personaMapKeys
	}
	p := experiment.Persona{ID: id}
	keys.into(d, n, path, &p)
	return p
}

// questionnaire reads the questionnaire. Absent options and items are placed at the questionnaire, so that
// "missing" errors point at it.
func questionnaire(d *decoder, n *node, path string) experiment.Questionnaire {
	var q experiment.Questionnaire
	f := questionnaireKeys.into(d, n, path, &q)
	if f == nil {
		return q
	}
	for _, k := range []string{"options", "items"} {
		if f[k] == nil {
			d.mark(child(path, k), child(path, k), n)
		}
	}
	return q
}

// items reads the questionnaire's items: a list of items or of their texts, or {file} naming a CSV file.
func items(d *decoder, n *node, path string) []experiment.Item {
	if n.kind == kindMap {
		if ff := d.fields(n, path, "file"); ff != nil {
			return d.itemCSV(ff["file"])
		}
		return nil
	}
	list := d.list(n, path, itemKeys.what("items"))
	var out []experiment.Item
	if len(list) > 0 {
		out = make([]experiment.Item, 0, len(list))
	}
	for i, e := range list {
		// Nothing reads an item's subtree once it is decoded (validation errors are placed by a second decoding,
		// see parse), so it goes at once: an item bank of 100,000 items is most of a spec's tree. Not when the
		// tree has aliases: another reader of a shared list would meet a hole.
		if !d.aliased {
			list[i] = nil
		}
		it := experiment.Item{ID: strconv.Itoa(i + 1)}
		if e.kind == kindScalar {
			it.Text = e.str
		} else if itemKeys.into(d, e, index(path, i), &it) == nil {
			continue
		}
		out = append(out, it)
	}
	return out
}

// scales reads the scales: a list of scales or of their ids, or a mapping id → name.
func (d *decoder) scales(n *node, path string) []experiment.Scale {
	var out []experiment.Scale
	if n != nil && n.kind == kindMap { // id → name
		for i, k := range n.keys {
			p := child(path, k.str)
			d.mark(index(path, i), p, n.vals[i])
			out = append(out, experiment.Scale{ID: k.str, Name: d.str(n.vals[i], p)})
		}
		return out
	}
	for i, e := range d.list(n, path, scaleKeys.what("scales")) {
		if e.kind == kindScalar {
			out = append(out, experiment.Scale{ID: e.str})
		} else if sc := scaleKeys.decodePtr(d, e, index(path, i)); sc != nil {
			out = append(out, *sc)
		}
	}
	return out
}

// options reads the questionnaire's default answer options.
func options(d *decoder, n *node, path string) experiment.OptionSet {
	return *d.optionSet(n, path, path, "")
}

// itemOptions reads the answer options of one item.
func itemOptions(d *decoder, n *node, path string) *experiment.OptionSet {
	return d.optionSet(n, path, path, "")
}

// optionSet reads options in any accepted form: a list of options, a mapping id → option in file order, or
// {options, delimiter, prepend_delimiter}. Options without an id or weight get their 1-based position.
// Only what is written is recorded: src is the path in the file, res the path in the resolved Spec.
func (d *decoder) optionSet(n *node, src, res, delim string) *experiment.OptionSet {
	set := &experiment.OptionSet{Delimiter: delim}
	inner, innerSrc := n, src
	if n.kind == kindMap && n.get("options") != nil {
		f := optionSetKeys.into(d, n, src, set)
		if f == nil {
			return set
		}
		inner, innerSrc = f["options"], child(src, "options")
	}
	d.mark(res, src, n)
	if inner == nil { // "options: null", as the JSON form of a set without options has it
		return set
	}
	resOpts := res + ".options"
	d.mark(resOpts, innerSrc, inner)
	add := func(i int, e *node, p, id string) {
		o := experiment.Option{ID: id, Weight: i + 1}
		d.mark(index(resOpts, i), p, e)
		switch e.kind {
		case kindScalar:
			o.Text = e.str
		case kindMap:
			f := optionKeys.into(d, e, p, &o)
			if v := f["id"]; v != nil && id != "" {
				d.errAt(v, child(p, "id"), "the id of an option in a mapping is its key; remove this id")
			}
		default:
			d.errAt(e, p, "want an option {id, text, weight} or its text, got %s", e.describe())
		}
		if o.ID == "" {
			o.ID = strconv.Itoa(i + 1)
		}
		set.Options = append(set.Options, o)
	}
	switch inner.kind {
	case kindSeq:
		for i, e := range inner.vals {
			add(i, e, index(innerSrc, i), "")
		}
	case kindMap:
		for i, k := range inner.keys {
			add(i, inner.vals[i], child(innerSrc, k.str), k.str)
		}
	case kindNull:
	default:
		d.errAt(inner, innerSrc, "want answer options: a list of {id, text, weight}, a mapping id → {text, weight}, or {options, delimiter, prepend_delimiter}; got %s", inner.describe())
	}
	return set
}

// answerModes reads answer.modes: a list of mode names (experiment.Validate checks them).
func answerModes(d *decoder, n *node, path string) []experiment.AnswerMode {
	var out []experiment.AnswerMode
	for _, m := range d.strings(n, path) {
		out = append(out, experiment.AnswerMode(m))
	}
	return out
}
