package experiment

import "fmt"

// What a model of provider anthropic can and cannot do. Anthropic's Messages API differs from the OpenAI format
// in ways a spec can run into:
//
//   - it has no seed parameter: the seeds still name the cells and are part of the response cache key (so each
//     seed's cell is called and cached on its own), but no seed is sent, so a seed does not make an answer
//     reproducible (Remarks says so);
//   - max_tokens is required, and temperature is at most 1;
//   - the system prompt comes before the conversation: a system message after the first user or assistant
//     message cannot be sent;
//   - it has no embeddings API, so a kind: embed spec cannot name it;
//   - pictures are sent as image blocks, without a detail level.
//
// The key is read from ANTHROPIC_API_KEY unless api_key_env names another variable; the base URL defaults to
// Anthropic's API (llm.DefaultAnthropicBaseURL).

// anthropicMaxTemperature is the highest temperature the Messages API accepts.
const anthropicMaxTemperature = 1

// checkAnthropic checks what a model of provider anthropic at path p cannot send.
func (s *Spec) checkAnthropic(errs *Errors, p string, m Model) {
	if s.IsEmbed() {
		errs.add(p+".provider", "anthropic has no embeddings API; a kind: embed spec needs an OpenAI-compatible provider: %s", oneOf([]string{ProviderOpenAI, ProviderSim}))
	}
	if m.Params.MaxTokens == 0 && !s.IsEmbed() {
		errs.add(p+".params.max_tokens", "missing: Anthropic's Messages API requires max_tokens; want a number of tokens ≥ 1, e.g. 16")
	}
	if t := m.Params.Temperature; t != nil && *t > anthropicMaxTemperature {
		errs.add(p+".params.temperature", "%v is out of range for provider anthropic; want a number from 0 to %d", *t, anthropicMaxTemperature)
	}
	if s.IsEmbed() {
		return
	}
	turns := false
	for i, msg := range s.effectivePrompt().Messages {
		switch {
		case msg.Role != RoleSystem:
			turns = true
		case turns:
			errs.add(fmt.Sprintf("prompt.messages[%d].role", i), "a system message after the first user or assistant message, "+
				"which %s (provider anthropic) cannot be sent: Anthropic takes the system prompt only before the conversation; "+
				"move it first or give it role \"user\"", m.ID)
			return
		}
	}
}

// anthropicRemarks are the remarks on model m (at path p) of provider anthropic: its seed is not sent, nor the
// picture detail.
func (s *Spec) anthropicRemarks(p string, m Model) []string {
	if s.IsEmbed() {
		return nil
	}
	out := []string{fmt.Sprintf("%s.provider: Anthropic's API has no seed: the seeds name %s's cells and key "+
		"its response cache, but are not sent, so each seed's answer is a sample of its own that the seed does not reproduce", p, m.ID)}
	if s.HasImages() && s.Image.Detail != "" && s.Image.Detail != ImageDetailAuto {
		out = append(out, fmt.Sprintf("image.detail: %s is not sent to %s: Anthropic's image blocks have no detail level", s.Image.Detail, m.ID))
	}
	return out
}
