package experiment

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/silicolab/silico/suggest"
)

// AnswerMode is what a chat cell records besides the option its text names.
type AnswerMode string

// The answer modes.
const (
	// AnswerText records the written answer alone (the default).
	AnswerText AnswerMode = "text"
	// AnswerLogprobs asks for the generated tokens' logprobs and records the probability of every option at the
	// position where the option label is generated.
	AnswerLogprobs AnswerMode = "logprobs"
	// AnswerSamples records, for each model, item and persona, the share of the run's seeds that chose each
	// option: the distribution of providers without logprobs.
	AnswerSamples AnswerMode = "samples"
	// AnswerJSONSchema constrains the answer with response_format: a JSON object whose "answer" is one of the
	// item's option ids (and, with Reason, a free-text "reason" after it).
	AnswerJSONSchema AnswerMode = "json_schema"
	// AnswerVerbalized asks, with response_format, for a stated probability per option id (VerbalizedSchema)
	// and records them normalised to sum 1, with their raw sum; the written answer is the most likely option.
	AnswerVerbalized AnswerMode = "verbalized"
)

var answerModes = []string{string(AnswerText), string(AnswerLogprobs), string(AnswerSamples), string(AnswerJSONSchema), string(AnswerVerbalized)}

// The values of a cell's probs_source: where its option probabilities come from.
const (
	// ProbsFromLogprobs: the label token's logprobs (modes logprobs, and json_schema with logprobs).
	ProbsFromLogprobs = "logprobs"
	// ProbsFromVerbalized: the probabilities the model stated (mode verbalized).
	ProbsFromVerbalized = "verbalized"
)

// listModes are the modes answer.modes may list.
var listModes = []string{string(AnswerText), string(AnswerLogprobs), string(AnswerVerbalized), string(AnswerSamples)}

// DefaultTopLogprobs is how many alternatives per token the logprobs answer asks for.
const DefaultTopLogprobs = MaxTopLogprobs

// JSONAnswerPrefix is what a json_schema answer generates before the option label, whitespace aside.
const JSONAnswerPrefix = `{"answer":"`

// AnswerSettings say how a model's cells answer; on a model or on the run (run.answer), the model's keys first.
type AnswerSettings struct {
	Mode AnswerMode `json:"mode,omitempty"`
	// Logprobs, with mode json_schema, also reads the label token's logprobs (found after JSONAnswerPrefix).
	Logprobs bool `json:"logprobs,omitempty"`
	// TopLogprobs is how many alternatives per token are asked for (1–20; 0: DefaultTopLogprobs).
	TopLogprobs int `json:"top_logprobs,omitempty"`
	// Prefix is fixed text the model writes before the label ("Answer: "), whitespace aside; the label is the
	// token that follows it. Empty: the first token.
	Prefix string `json:"prefix,omitempty"`
	// Reason, with mode json_schema, adds a free-text "reason" after the answer.
	Reason bool `json:"reason,omitempty"`
	// Modes lists several answer modes at once (text, logprobs, verbalized, samples); with verbalized and another
	// mode every cell has two calls, the probes of CellAnswer. A model's own modes replace run.answer's.
	Modes []AnswerMode `json:"modes,omitempty"`
}

// AnswerFor returns the answer settings of model m: its own keys over run.answer's, defaults filled in; with
// answer.modes, those of its main call (probe 0; see CellAnswer).
func (s *Spec) AnswerFor(m Model) AnswerSettings {
	var out AnswerSettings
	for _, a := range []*AnswerSettings{s.Run.Answer, m.Answer} {
		if a == nil {
			continue
		}
		if a.Mode != "" {
			out.Mode = a.Mode
		}
		out.Logprobs = out.Logprobs || a.Logprobs
		if a.TopLogprobs != 0 {
			out.TopLogprobs = a.TopLogprobs
		}
		if a.Prefix != "" {
			out.Prefix = a.Prefix
		}
		out.Reason = out.Reason || a.Reason
		if len(a.Modes) > 0 {
			out.Modes = a.Modes
		}
	}
	if out.Mode == "" && len(out.Modes) > 0 {
		// The main call of a list of modes: logprobs when listed (it reads the label token), else samples, or
		// verbalized when it is the only one; samples needs nothing of the call beyond the text.
		switch {
		case slices.Contains(out.Modes, AnswerLogprobs):
			out.Mode = AnswerLogprobs
		case slices.Contains(out.Modes, AnswerSamples):
			out.Mode = AnswerSamples
		case len(out.Modes) == 1 && out.Modes[0] == AnswerVerbalized:
			out.Mode = AnswerVerbalized
		}
	}
	if out.Mode == "" {
		out.Mode = AnswerText
	}
	if out.Mode == AnswerLogprobs {
		out.Logprobs = true
	}
	if out.Logprobs && out.TopLogprobs == 0 {
		out.TopLogprobs = DefaultTopLogprobs
	}
	if out.Mode == AnswerJSONSchema {
		out.Prefix = JSONAnswerPrefix
	}
	return out
}

// ProbsSource is where the probabilities of the model's cells come from: ProbsFromLogprobs, ProbsFromVerbalized,
// or "" when its cells record none (modes text and samples, json_schema without logprobs).
func (a AnswerSettings) ProbsSource() string {
	switch {
	case a.Mode == AnswerVerbalized:
		return ProbsFromVerbalized
	case a.Logprobs:
		return ProbsFromLogprobs
	}
	return ""
}

// Distributed says whether the model's cells record a probability per option (logprobs, stated, or samples over
// seeds).
func (a AnswerSettings) Distributed() bool { return a.ProbsSource() != "" || a.Mode == AnswerSamples }

// VerbalizedCellSuffix ends the id of a cell's verbalized probe.
const VerbalizedCellSuffix = "/verbalized"

// Probes is how many calls each cell position has for its answer modes: 2 when answer.modes lists verbalized
// and another mode (the main call, then the verbalized one), 1 otherwise. Validation holds every model to the
// same number, so the grid stays rectangular; this reads the first model's.
func (s *Spec) Probes() int {
	if len(s.Models) == 0 {
		return 1
	}
	return s.AnswerFor(s.Models[0]).probes()
}

func (a AnswerSettings) probes() int {
	if len(a.Modes) > 1 && slices.Contains(a.Modes, AnswerVerbalized) {
		return 2
	}
	return 1
}

// CellAnswer returns the answer settings of cell c's call: probe 1 is the verbalized call, probe 0 the main call
// with the model's settings (AnswerFor).
func (s *Spec) CellAnswer(c Cell) AnswerSettings {
	if c.Probe == 1 {
		return AnswerSettings{Mode: AnswerVerbalized}
	}
	return s.AnswerFor(s.Models[c.Model])
}

// CallParams are the parameters a call of cell c sends: its model's params with what its answer mode asks for
// (logprobs, a response_format naming the item's options as the cell shows them). Every request of the cell, its cache key and what
// `starter prompt` shows use them.
func (s *Spec) CallParams(c Cell) Params {
	m := s.Models[c.Model]
	p := m.Params
	a := s.CellAnswer(c)
	if a.Logprobs {
		p.Logprobs = true
		if p.TopLogprobs == nil {
			n := a.TopLogprobs
			p.TopLogprobs = &n
		}
	}
	if a.Mode == AnswerJSONSchema && len(p.ResponseFormat) == 0 {
		p.ResponseFormat = answerSchema(s.Shown(c).Set, a.Reason)
	}
	if a.Mode == AnswerVerbalized {
		p.ResponseFormat = VerbalizedSchema(s.Shown(c).Set)
	}
	return p
}

// VerbalizedSchema is the response_format of a verbalized answer over set: a strict json_schema named
// "probabilities" whose object has one required number property per option id, in the set's order, and no
// others. Each property's description says what the number is, for a server that shows the schema to the model;
// the instruction Render appends (VerbalizedInstruction) says it to a server that only constrains the output
// to the schema (llama.cpp's grammars). Keys are option ids, not labels: the reply names the options exactly.
func VerbalizedSchema(set OptionSet) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"json_schema","json_schema":{"name":"probabilities","strict":true,"schema":{"type":"object","properties":{`)
	ids := make([]string, len(set.Options))
	for i, o := range set.Options {
		ids[i] = o.ID
		id, _ := json.Marshal(o.ID) // strings always encode
		desc, _ := json.Marshal(fmt.Sprintf("the probability, from 0 to 1, that you would choose option %s", o.ID))
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(id)
		b.WriteString(`:{"type":"number","description":`)
		b.Write(desc)
		b.WriteByte('}')
	}
	required, _ := json.Marshal(ids)
	b.WriteString(`},"required":`)
	b.Write(required)
	b.WriteString(`,"additionalProperties":false}}}`)
	return json.RawMessage(b.String())
}

// VerbalizedInstruction is the paragraph Render appends to the last user message of a verbalized cell: what the
// numbers the schema asks for mean, naming the option ids that are its keys.
func VerbalizedInstruction(set OptionSet) string {
	ids := make([]string, len(set.Options))
	for i, o := range set.Options {
		ids[i] = o.ID
	}
	return "Instead of choosing one option, answer with a JSON object that gives, for each option (" + strings.Join(ids, ", ") +
		"), the probability that you would choose it; the probabilities sum to 1."
}

// answerSchema is the response_format of a json_schema answer over set: strict, the answer first (so its label
// comes right after JSONAnswerPrefix), then the reason.
func answerSchema(set OptionSet, reason bool) json.RawMessage {
	ids := make([]string, len(set.Options))
	for i, o := range set.Options {
		ids[i] = o.ID
	}
	enum, _ := json.Marshal(ids) // strings always encode
	var b strings.Builder
	b.WriteString(`{"type":"json_schema","json_schema":{"name":"answer","strict":true,"schema":{"type":"object","properties":{"answer":{"type":"string","enum":`)
	b.Write(enum)
	b.WriteString(`}`)
	required := `["answer"]`
	if reason {
		b.WriteString(`,"reason":{"type":"string"}`)
		required = `["answer","reason"]`
	}
	b.WriteString(`},"required":` + required + `,"additionalProperties":false}}}`)
	return json.RawMessage(b.String())
}

// checkAnswers checks run.answer against the models that take it and each model's own answer section.
func (s *Spec) checkAnswers(errs *Errors) {
	for i, m := range s.Models {
		if n := s.AnswerFor(m).probes(); n != s.Probes() {
			errs.add(fmt.Sprintf("models[%d].answer.modes", i), "%s has %d call(s) per cell and %s %d: a verbalized probe beside another mode must be asked of every model or none; give every model the same answer.modes", m.ID, n, s.Models[0].ID, s.Probes())
		}
	}
	var inherit []Model
	for _, m := range s.Models {
		if m.Answer == nil {
			inherit = append(inherit, m)
		}
	}
	s.checkAnswer(errs, "run.answer", s.Run.Answer, inherit)
	for i, m := range s.Models {
		s.checkAnswer(errs, fmt.Sprintf("models[%d].answer", i), m.Answer, []Model{m})
	}
}

// checkAnswer checks an answer section at path for model m (nil: run.answer, checked against every model).
func (s *Spec) checkAnswer(errs *Errors, path string, a *AnswerSettings, models []Model) {
	if a == nil {
		return
	}
	if a.Mode != "" && !contains(answerModes, string(a.Mode)) {
		errs.add(path+".mode", "unknown mode %q%s; want %s", a.Mode, suggest.DidYouMean(string(a.Mode), answerModes), oneOf(answerModes))
		return
	}
	for i, md := range a.Modes {
		if !contains(listModes, string(md)) {
			errs.add(fmt.Sprintf("%s.modes[%d]", path, i), "unknown mode %q%s; want %s", md, suggest.DidYouMean(string(md), listModes), oneOf(listModes))
		}
	}
	if a.TopLogprobs < 0 || a.TopLogprobs > MaxTopLogprobs {
		errs.add(path+".top_logprobs", "%d is out of range; want alternatives per token from 1 to %d (0: %d)", a.TopLogprobs, MaxTopLogprobs, DefaultTopLogprobs)
	}
	if s.IsEmbed() {
		errs.add(path, "a kind: embed spec has no answers; remove answer")
		return
	}
	for _, m := range models {
		eff := s.AnswerFor(m)
		switch {
		case eff.Logprobs && m.Provider == ProviderAnthropic:
			errs.add(path+".mode", "%s: Anthropic's API returns no token probabilities; use mode samples, the distribution over the seeds", m.ID)
		case eff.Logprobs && m.Provider == ProviderGemini:
			errs.add(path+".mode", "%s: silico asks Gemini for no token probabilities (its OpenAI-compatible endpoint does not document logprobs); use mode samples, the distribution over the seeds", m.ID)
		case eff.Logprobs && IsReasoningModel(m.Name):
			errs.add(path+".mode", "%s: %s is a reasoning model, for which OpenAI returns no logprobs; use mode samples, the distribution over the seeds", m.ID, m.Name)
		case eff.Mode == AnswerJSONSchema && m.Provider == ProviderAnthropic:
			errs.add(path+".mode", "%s: json_schema is sent as OpenAI's response_format, which Anthropic's API does not take", m.ID)
		case eff.Mode == AnswerVerbalized && m.Provider == ProviderAnthropic:
			errs.add(path+".mode", "%s: verbalized asks for the probabilities through OpenAI's response_format json_schema, which Anthropic's API does not take; use mode samples, the distribution over the seeds", m.ID)
		case eff.Mode == AnswerVerbalized && len(m.Params.ResponseFormat) > 0:
			errs.add(path+".mode", "%s: verbalized sends a response_format of its own (a probability per option id), and the model's params set response_format; remove params.response_format or use another mode", m.ID)
		case eff.Mode == AnswerSamples && len(s.Seeds) < 2:
			errs.add(path+".mode", "samples is the distribution of answers over the seeds, and the spec has %d seed; give at least 2 (more seeds, finer shares)", len(s.Seeds))
		}
	}
	if len(models) == 0 {
		return
	}
	// The keys that only some modes take, against the mode this section ends up with (a model's own, or the
	// first model's for run.answer).
	mode := s.AnswerFor(models[0]).Mode
	if a.Mode != "" {
		mode = a.Mode
	}
	if a.Prefix != "" && mode == AnswerJSONSchema {
		errs.add(path+".prefix", "mode json_schema finds the label after %s itself; remove prefix", JSONAnswerPrefix)
	}
	if a.Prefix != "" && mode == AnswerVerbalized {
		errs.add(path+".prefix", "mode verbalized reads a JSON object of probabilities, with no label after a prefix; remove prefix")
	}
	if a.Reason && mode != AnswerJSONSchema {
		errs.add(path+".reason", "reason is a field of the json_schema answer; set mode: json_schema or remove reason")
	}
	if a.Logprobs && mode != AnswerJSONSchema && mode != AnswerLogprobs {
		errs.add(path+".logprobs", "logprobs: true goes with mode json_schema (mode logprobs implies it); mode %s has no label token to read", mode)
	}
}

// String describes the settings as `starter validate` and the report show them ("logprobs, top 20").
func (a AnswerSettings) String() string {
	out := string(a.Mode)
	if a.Mode == AnswerJSONSchema && a.Logprobs {
		out += " with logprobs"
	}
	if a.Logprobs {
		out += fmt.Sprintf(", top %d", a.TopLogprobs)
	}
	if a.Prefix != "" && a.Mode != AnswerJSONSchema {
		out += fmt.Sprintf(", label after %q", a.Prefix)
	}
	return out
}
