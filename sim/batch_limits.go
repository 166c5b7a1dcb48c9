package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Two ways an OpenAI batch fails as a whole, besides an input that does not validate: the organisation's
// enqueued-token limit for the model (BatchConfig.EnqueuedTokens), and lines the provider rejects
// (BatchConfig.RejectLines). Either makes the create's batch failed, with nothing run, and OpenAI's
// errors.data[] {code, message, param, line}: line null for the token limit, the line of each rejected request.

// codeTokenLimit is OpenAI's code of a batch over the enqueued-token limit.
const codeTokenLimit = "token_limit_exceeded"

// tokenLimitMessage is OpenAI's message for a batch over the enqueued-token limit of model.
func tokenLimitMessage(model string, limit int) string {
	return fmt.Sprintf("Enqueued token limit reached for %s in organization org-sim. Limit: %s enqueued tokens. "+
		"Please try again once some in_progress batches have been completed.", model, thousands(limit))
}

// thousands writes n with commas, as OpenAI writes its limits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// rejectLines fails the lines whose custom_id is one of BatchConfig.RejectLines, by their line in the input file.
func (b *batches) rejectLines(lines []batchLine, lineNo []int) []batchValidationError {
	var out []batchValidationError
	for i, l := range lines {
		if !slices.Contains(b.cfg.RejectLines, l.customID) {
			continue
		}
		n := lineNo[i]
		param := "body.messages"
		out = append(out, batchValidationError{Code: "invalid_request", Param: &param, Line: &n,
			Message: "This line's request is invalid and the batch was not run (simulated: reject_lines)."})
	}
	return out
}

// inputTokens is what a batch's lines count against the enqueued-token limit: each request's prompt tokens (a
// chat request's messages, an embeddings request's inputs), as the synchronous endpoints count them.
func (b *batches) inputTokens(endpoint string, lines []batchLine) int {
	n := 0
	for _, l := range lines {
		if endpoint == "/v1/embeddings" {
			var req embeddingRequest
			if json.Unmarshal(l.body, &req) != nil {
				continue
			}
			in, err := parseEmbedInput(req.Input)
			if err != nil {
				continue
			}
			tc := b.lines.counterFor(req.Model)
			for _, x := range in {
				if x.tokens != nil {
					n += len(x.tokens)
				} else if k, err := tc.count(x.text); err == nil {
					n += k
				}
			}
			continue
		}
		var req chatRequest
		if json.Unmarshal(l.body, &req) != nil {
			continue
		}
		msgs := make([]chatMessage, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = chatMessage{Role: m.Role, Name: m.Name, Content: m.Content.Text}
		}
		if k, err := b.lines.counterFor(req.Model).chatPromptTokens(msgs); err == nil {
			n += k
		}
	}
	return n
}

// overTokenLimit reports whether a batch of tokens input tokens for model would exceed BatchConfig.EnqueuedTokens
// with the model's OpenAI batches still in progress at now. The caller holds b.mu, so that two creates cannot both
// fit in what only one does.
func (b *batches) overTokenLimit(model string, tokens int, now time.Time) bool {
	if b.cfg.EnqueuedTokens == 0 {
		return false
	}
	enqueued := tokens
	for _, sb := range b.batches {
		if sb.format == BatchOpenAI && sb.model == model && len(sb.errors) == 0 && !terminal(sb.status(now, b.cfg)) {
			enqueued += sb.tokens
		}
	}
	return enqueued > b.cfg.EnqueuedTokens
}
