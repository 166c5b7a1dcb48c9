package experiment

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// The paths the clients add to a model's base_url: OpenAI-compatible servers serve chat and embeddings under
// their API's root (OpenAI's https://api.openai.com/v1), Anthropic's API its Messages API under its own.
const (
	PathChat       = "/chat/completions"
	PathEmbeddings = "/embeddings"
	PathMessages   = "/messages"
)

// RequestPath is the path under base_url that the calls of model m go to.
func (s *Spec) RequestPath(m Model) string {
	switch {
	case s.IsEmbed():
		return PathEmbeddings
	case m.Provider == ProviderAnthropic:
		return PathMessages
	}
	return PathChat
}

// MinReasonTokens is the completion cap below which a json_schema answer with a reason is remarked on: the
// object {"answer":"<id>","reason":"..."} takes 7 to 10 tokens (compact or spaced) before the reason starts, and
// a reason of a sentence or two 15 to 50 more, so under 64 tokens many answers are cut at the cap, their JSON
// left unclosed.
const MinReasonTokens = 64

// VerbalizedTokensPerOption is what a verbalized answer's completion cap is held to per option: an entry
// `"<id>": 0.25, ` takes 4 to 7 tokens (quotes, id, colon, number, comma, spaces), so 8 per option and 4 for the
// braces leave room for a spaced or fenced object.
const VerbalizedTokensPerOption = 8

// Remarks are what a valid spec asks for that will not happen as written, or that is likely a mistake, one
// "field: remark" each: the seed of a model of provider anthropic, which is not sent, and the picture detail it
// does not take; a base_url without a version in its path; a json_schema answer with a reason under a completion
// cap too small for it, and a verbalized answer under a cap too small for an item's object of probabilities
// (VerbalizedTokensPerOption); several seeds at temperature 0 (GreedySeeds). starter validate prints them as notes.
func (s *Spec) Remarks() []string {
	var out []string
	for i, m := range s.Models {
		p := fmt.Sprintf("models[%d]", i)
		if m.Provider == ProviderAnthropic {
			out = append(out, s.anthropicRemarks(p, m)...)
		}
		if r := s.baseURLRemark(p, m); r != "" {
			out = append(out, r)
		}
		if r := s.reasonRemark(p, m); r != "" {
			out = append(out, r)
		}
		if r := s.verbalizedRemark(p, m); r != "" {
			out = append(out, r)
		}
		if r := s.GreedySeeds(m); r != "" {
			out = append(out, p+".params.temperature: "+r)
		}
	}
	return out
}

// GreedySeeds is the warning for model m of a spec with several seeds when m's temperature is 0, "" otherwise:
// at temperature 0 every seed asks the model the same greedy question, so its seeds are not independent draws
// and their agreement says nothing about how stable an answer is. Remarks, the summary's warnings and the
// report give it.
func (s *Spec) GreedySeeds(m Model) string {
	if t := m.Params.Temperature; s.IsEmbed() || t == nil || *t != 0 || len(s.Seeds) < 2 {
		return ""
	}
	return fmt.Sprintf("model %s has %d seeds at temperature 0: every seed asks the same greedy question, so its "+
		"answers are not independent draws (they differ only by the server's nondeterminism); use one seed, or a "+
		"temperature above 0 to sample", m.ID, len(s.Seeds))
}

// versionSegment is a path segment naming an API version: v1, v2, v1beta, v1alpha1, ...
var versionSegment = regexp.MustCompile(`^v[0-9]+([a-z]+[0-9]*)?$`)

// WithAPIVersion is base URL raw with /v1 added when no segment of its path names an API version
// ("http://localhost:11434" → "http://localhost:11434/v1"), without user info or query; "" when one does
// ("https://api.groq.com/openai/v1", "https://generativelanguage.googleapis.com/v1beta/openai"), or raw is
// empty or not a URL. The usual servers (Ollama, llama.cpp's, vLLM, OpenAI's, Anthropic's) serve their API
// under /v1 and answer 404 to a request of /chat/completions at their root.
func WithAPIVersion(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if raw == "" || err != nil || u.Host == "" {
		return ""
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if versionSegment.MatchString(seg) {
			return ""
		}
	}
	return strings.TrimRight(publicURL(raw), "/") + "/v1"
}

// baseURLRemark remarks on a base_url whose path names no API version (WithAPIVersion), with the URL its calls
// go to.
func (s *Spec) baseURLRemark(p string, m Model) string {
	fix := WithAPIVersion(m.BaseURL)
	if fix == "" {
		return ""
	}
	base := strings.TrimSuffix(fix, "/v1")
	return fmt.Sprintf("%s.base_url: %s has no API version in its path, so %s's calls go to %s%s; most servers "+
		"(Ollama, llama.cpp, vLLM, OpenAI, Anthropic) serve their API under /v1 and answer 404 there: if this one does, "+
		"write base_url: %s", p, base, m.ID, base, s.RequestPath(m), fix)
}

// reasonRemark remarks on a json_schema answer with a reason under a completion cap below MinReasonTokens.
func (s *Spec) reasonRemark(p string, m Model) string {
	a := s.AnswerFor(m)
	if s.IsEmbed() || a.Mode != AnswerJSONSchema || !a.Reason {
		return ""
	}
	capped := m.Params.CompletionCap()
	if capped >= MinReasonTokens {
		return ""
	}
	field := capField(p, m)
	return fmt.Sprintf("%s: %d tokens is little for a json_schema answer with a reason: {\"answer\":\"<id>\",\"reason\":\"...\"} "+
		"takes 7 to 10 tokens before the reason starts, so answers whose reason runs longer are cut at the cap "+
		"(finish_reason length), their JSON unclosed and the reason lost; give at least %d (e.g. 256), or remove reason: true",
		field, capped, MinReasonTokens)
}

// verbalizedRemark remarks on a verbalized answer under a completion cap below VerbalizedTokensPerOption per
// option of the spec's largest option set, plus 4.
func (s *Spec) verbalizedRemark(p string, m Model) string {
	if s.IsEmbed() || s.AnswerFor(m).Mode != AnswerVerbalized {
		return ""
	}
	most := 0
	for it := range s.Questionnaire.Items {
		most = max(most, len(s.OptionsFor(it).Options))
	}
	need := VerbalizedTokensPerOption*most + 4
	capped := m.Params.CompletionCap()
	if capped >= need {
		return ""
	}
	field := capField(p, m)
	return fmt.Sprintf("%s: %d tokens is little for a verbalized answer: an object of %d probabilities takes up to %d tokens, "+
		"so answers may be cut at the cap (finish_reason length, unparsed as Truncated); give at least %d",
		field, capped, most, need, need)
}

// capField is the path of model m's completion cap (at p): max_completion_tokens when it sets one, else max_tokens.
func capField(p string, m Model) string {
	if m.Params.MaxCompletionTokens > 0 {
		return p + ".params.max_completion_tokens"
	}
	return p + ".params.max_tokens"
}
