package experiment

import (
	"fmt"
	"strconv"
	"strings"
)

// Spec kinds.
const (
	// KindChat asks every model every item for every persona (the default).
	KindChat = "chat"
	// KindEmbed asks every model for the embedding vector of every text (see EmbedSettings).
	KindEmbed = "embed"
)

// Sources of the texts of an embed spec.
const (
	EmbedItems    = "items"
	EmbedPersonas = "personas"
	EmbedPrompts  = "prompts"
	EmbedCSV      = "csv"
)

var (
	kinds        = []string{KindChat, KindEmbed}
	embedSources = []string{EmbedItems, EmbedPersonas, EmbedPrompts, EmbedCSV}
)

// Defaults of EmbedSettings.
const (
	DefaultMaxInputsPerRequest = 64
	// DefaultMaxTokensPerRequest is OpenAI's input limit of its embedding models (8,191 tokens per input), used
	// as the per-request bound too: local servers (llama.cpp's --batch-size) often allow less.
	DefaultMaxTokensPerRequest = 8191
)

// EmbedSettings are the texts of an embed spec and how they are packed into requests.
type EmbedSettings struct {
	// Texts is where the texts come from: items (the questionnaire's item texts), personas (their rendered
	// descriptions), prompts (the rendered prompt of every item × persona, messages joined by blank lines) or
	// csv (a column of a CSV file, read into Inputs when the spec is loaded).
	Texts string `json:"texts"`
	// File and Column name the CSV file and its text column (texts: csv); IDColumn its optional id column
	// (default: the row number).
	File     string `json:"file,omitempty"`
	Column   string `json:"column,omitempty"`
	IDColumn string `json:"id_column,omitempty"`
	// Inputs are the texts of texts: csv, resolved from the file.
	Inputs []EmbedInput `json:"inputs,omitempty"`
	// MaxInputsPerRequest and MaxTokensPerRequest bound one request's texts and their tiktoken count.
	MaxInputsPerRequest int `json:"max_inputs_per_request,omitempty"`
	MaxTokensPerRequest int `json:"max_tokens_per_request,omitempty"`
	// Dimensions asks models that support it (OpenAI's text-embedding-3) for shorter vectors; 0: the model's own.
	Dimensions int `json:"dimensions,omitempty"`
}

// EmbedInput is one text of an embed spec read from a CSV file.
type EmbedInput struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// EmbedText is one text an embed spec asks every model to embed, in submission order.
type EmbedText struct {
	// ID is the item or persona id, "item/persona" for prompts, or the CSV id.
	ID   string
	Text string
}

// IsEmbed reports whether the spec is an embeddings run.
func (s *Spec) IsEmbed() bool { return s.Kind == KindEmbed }

// EmbedTexts lists the texts of an embed spec in submission order. A cell of an embed spec is (model, text):
// cell i is text i%len(texts) of model i/len(texts).
func (s *Spec) EmbedTexts() ([]EmbedText, error) {
	if s.Embed == nil {
		return nil, nil
	}
	var out []EmbedText
	switch s.Embed.Texts {
	case EmbedItems:
		for _, it := range s.Questionnaire.Items {
			out = append(out, EmbedText{ID: it.ID, Text: it.Text})
		}
	case EmbedPersonas:
		for i, p := range s.Personas {
			out = append(out, EmbedText{ID: p.ID, Text: s.PersonaDescription(i)})
		}
	case EmbedPrompts:
		for it := range s.Questionnaire.Items {
			for p := range s.Personas {
				msgs, err := s.Render(Cell{Item: it, Persona: p}, nil)
				if err != nil {
					return nil, fmt.Errorf("render prompt of item %s, persona %s: %w", s.Questionnaire.Items[it].ID, s.Personas[p].ID, err)
				}
				parts := make([]string, len(msgs))
				for i, m := range msgs {
					parts[i] = m.Content
				}
				out = append(out, EmbedText{ID: s.Questionnaire.Items[it].ID + "/" + s.Personas[p].ID, Text: strings.Join(parts, "\n\n")})
			}
		}
	case EmbedCSV:
		for _, in := range s.Embed.Inputs {
			out = append(out, EmbedText(in))
		}
	}
	return out, nil
}

// numEmbedTexts counts the texts of an embed spec without rendering them.
func (s *Spec) numEmbedTexts() int {
	if s.Embed == nil {
		return 0
	}
	switch s.Embed.Texts {
	case EmbedItems:
		return len(s.Questionnaire.Items)
	case EmbedPersonas:
		return len(s.Personas)
	case EmbedPrompts:
		return len(s.Questionnaire.Items) * len(s.Personas)
	case EmbedCSV:
		return len(s.Embed.Inputs)
	}
	return 0
}

// EmbedCell splits cell i of an embed spec into its model and text indexes.
func (s *Spec) EmbedCell(i int) (model, text int) {
	n := max(1, s.numEmbedTexts())
	return i / n, i % n
}

// embedPasses plans one pass per model: an embed pass packs its texts into requests itself, and texts do not
// depend on the seed.
func (s *Spec) embedPasses() []Pass {
	n := s.numEmbedTexts()
	out := make([]Pass, 0, len(s.Models))
	for m := range s.Models {
		out = append(out, Pass{Index: m, Model: m, Start: m * n, End: (m + 1) * n})
	}
	return out
}

func (s *Spec) applyEmbedDefaults() {
	if s.Embed == nil {
		s.Embed = &EmbedSettings{}
	}
	e := s.Embed
	if e.Texts == "" {
		e.Texts = EmbedItems
	}
	if e.MaxInputsPerRequest == 0 {
		e.MaxInputsPerRequest = DefaultMaxInputsPerRequest
	}
	if e.MaxTokensPerRequest == 0 {
		e.MaxTokensPerRequest = DefaultMaxTokensPerRequest
	}
}

// checkKind checks the kind and, for embed specs, the embed section; it reports which of the chat sections the
// kind needs.
func (s *Spec) checkKind(errs *Errors) (personas, items bool) {
	switch s.Kind {
	case "", KindChat:
		if s.Embed != nil {
			errs.add("embed", "only for kind: embed; set kind: embed or remove the embed section")
		}
		return true, true
	case KindEmbed:
	default:
		errs.add("kind", "unknown kind %q; want %s", s.Kind, oneOf(kinds))
		return true, true
	}
	if len(s.Seeds) > 1 {
		errs.add("seeds", "%d seeds, but embeddings do not sample: a kind: embed spec takes at most one seed", len(s.Seeds))
	}
	if s.Run.Cumulative {
		errs.add("run.cumulative", "cumulative mode is for chat specs; remove it from a kind: embed spec")
	}
	e := s.Embed
	if e == nil {
		errs.add("embed", "missing: a kind: embed spec needs embed: {texts: items|personas|prompts|csv}")
		return false, false
	}
	nonNegative(errs, "embed.max_inputs_per_request", e.MaxInputsPerRequest, "texts per request ≥ 1 (default 64)")
	nonNegative(errs, "embed.max_tokens_per_request", e.MaxTokensPerRequest, "tokens per request ≥ 1 (default 8191)")
	nonNegative(errs, "embed.dimensions", e.Dimensions, "dimensions ≥ 1, or 0 for the model's own")
	csvOnly := func() {
		for _, f := range []struct{ key, v string }{{"file", e.File}, {"column", e.Column}, {"id_column", e.IDColumn}} {
			if f.v != "" {
				errs.add("embed."+f.key, "only for texts: csv; remove it, or set texts: csv")
			}
		}
	}
	switch e.Texts {
	case EmbedItems:
		csvOnly()
		return false, true
	case EmbedPersonas:
		csvOnly()
		return true, false
	case EmbedPrompts:
		csvOnly()
		return true, true
	case EmbedCSV:
		if len(e.Inputs) == 0 && e.File == "" {
			errs.add("embed.inputs", "no texts: name a CSV file with embed.file and its text column with embed.column")
		}
		seen := map[string]int{}
		for i, in := range e.Inputs {
			if j, dup := seen[in.ID]; dup {
				errs.add(fmt.Sprintf("embed.inputs[%d].id", i), "duplicate id %q, already row %d; ids must be unique", in.ID, j+1)
			}
			seen[in.ID] = i
		}
	default:
		errs.add("embed.texts", "unknown source %q; want %s", e.Texts, oneOf(embedSources))
	}
	return false, false
}

// EmbedInputID is the id of the i-th (0-based) CSV text without an id column: its row number.
func EmbedInputID(i int) string { return strconv.Itoa(i + 1) }

// PackTexts groups texts, given by their token counts in submission order, into requests: each request takes
// the next texts while it has fewer than maxInputs and their tokens stay within maxTokens. A text longer than
// maxTokens on its own fits in no request: it is listed in tooLong and left out. Both lists hold indexes into
// tokens.
func PackTexts(tokens []int, maxInputs, maxTokens int) (batches [][]int, tooLong []int) {
	maxInputs, maxTokens = max(1, maxInputs), max(1, maxTokens)
	var cur []int
	total := 0
	for i, n := range tokens {
		if n > maxTokens {
			tooLong = append(tooLong, i)
			continue
		}
		if len(cur) > 0 && (len(cur) >= maxInputs || total+n > maxTokens) {
			batches = append(batches, cur)
			cur, total = nil, 0
		}
		cur = append(cur, i)
		total += n
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches, tooLong
}
