package experiment

import (
	"fmt"
	"strings"
)

// OriginalVariant is the id of an item's own wording and of the spec's own prompt: a variant may not take it.
const OriginalVariant = "original"

// Variant is another wording of an item. The item is asked in its own text (variant OriginalVariant) and in each
// of its variants; a variant's cells show the item's options, scored with the item's weights.
type Variant struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Reversed says the wording is negated: its score is keyed opposite to the item's (see CellScore).
	Reversed bool `json:"reversed,omitempty"`
}

// PromptVariant is another prompt, of the shape of Spec.Prompt: every cell is asked in the spec's prompt
// (variant OriginalVariant) and in each prompt variant.
type PromptVariant struct {
	ID       string    `json:"id"`
	Type     string    `json:"type"`
	Template string    `json:"template,omitempty"`
	Messages []Message `json:"messages,omitempty"`
}

// Prompt is the variant's prompt.
func (v PromptVariant) Prompt() Prompt {
	return Prompt{Type: v.Type, Template: v.Template, Messages: v.Messages}
}

// Variants is how many wordings item i is asked in: its own and each of its variants.
func (s *Spec) Variants(i int) int { return 1 + len(s.Questionnaire.Items[i].Variants) }

// NumPromptVariants is how many prompts every cell is asked in: the spec's and each of prompt_variants.
func (s *Spec) NumPromptVariants() int { return 1 + len(s.PromptVariants) }

// HasVariants says whether some item has wording variants.
func (s *Spec) HasVariants() bool {
	if s.rt.fresh(s) {
		return s.rt.hasVariants // a row per cell asks: an item bank is not walked every time
	}
	for i := range s.Questionnaire.Items {
		if len(s.Questionnaire.Items[i].Variants) > 0 {
			return true
		}
	}
	return false
}

// VariantID is the id of cell c's wording: OriginalVariant or the variant's id.
func (s *Spec) VariantID(c Cell) string {
	if c.Variant == 0 {
		return OriginalVariant
	}
	return s.Questionnaire.Items[c.Item].Variants[c.Variant-1].ID
}

// PromptVariantID is the id of cell c's prompt: OriginalVariant or the prompt variant's id.
func (s *Spec) PromptVariantID(c Cell) string {
	if c.PromptVariant == 0 {
		return OriginalVariant
	}
	return s.PromptVariants[c.PromptVariant-1].ID
}

// QuestionText is the text cell c asks: its item's, or its variant's.
func (s *Spec) QuestionText(c Cell) string {
	it := &s.Questionnaire.Items[c.Item]
	if c.Variant == 0 {
		return it.Text
	}
	return it.Variants[c.Variant-1].Text
}

// Original says whether c is asked as the spec writes it: its item's own wording, the spec's own prompt, options
// in the item's one order (or a balanced item's as-written cell), and no verbalized probe. Analyses that pool
// answers per item against the humans or into a personas × items matrix read such cells only.
func (c Cell) Original() bool {
	return c.Variant == 0 && c.PromptVariant == 0 && c.Order == 0 && c.Probe == 0
}

// CellScore is Score for cell c: a variant whose wording is negated (Variant.Reversed) keys the item opposite,
// so the score is reversed when exactly one of the item and the variant is.
func (s *Spec) CellScore(c Cell, id string) (score int, ok bool) {
	rev := s.Questionnaire.Items[c.Item].Reversed
	if c.Variant > 0 {
		rev = rev != s.Questionnaire.Items[c.Item].Variants[c.Variant-1].Reversed
	}
	return s.score(c.Item, id, rev)
}

// checkVariants checks every item's variants and the prompt variants.
func (s *Spec) checkVariants(errs *Errors) {
	itemIDs := make(map[string]bool, len(s.Questionnaire.Items))
	for _, it := range s.Questionnaire.Items {
		itemIDs[it.ID] = true
	}
	for i, it := range s.Questionnaire.Items {
		if len(it.Variants) == 0 {
			continue
		}
		path := fmt.Sprintf("questionnaire.items[%d].variants", i)
		if s.IsEmbed() {
			errs.add(path, "a kind: embed spec embeds each item once; remove variants")
			continue
		}
		if s.Run.Cumulative {
			errs.add(path, "run.cumulative gives each persona one answer per item to remember, and variants ask the item again in other words; drop one of them")
		}
		seen := map[string]int{}
		for k, v := range it.Variants {
			p := fmt.Sprintf("%s[%d]", path, k)
			checkVariantID(errs, seen, p, "variant", v.ID, k)
			if itemIDs[it.ID+":"+v.ID] {
				errs.add(p+".id", "%q makes cell id segment %q, which is the id of another item; rename the variant or that item", v.ID, it.ID+":"+v.ID)
			}
			if strings.TrimSpace(v.Text) == "" {
				errs.add(p+".text", "missing: a variant needs the item's question in other words")
			}
		}
	}
	if len(s.PromptVariants) == 0 {
		return
	}
	if s.IsEmbed() {
		errs.add("prompt_variants", "a kind: embed spec renders no chat prompt per cell; remove prompt_variants")
		return
	}
	if s.Run.Cumulative {
		errs.add("prompt_variants", "run.cumulative replays a persona's earlier turns, and prompt variants would mix prompts in one history; drop one of them")
	}
	seen := map[string]int{}
	for k, v := range s.PromptVariants {
		p := fmt.Sprintf("prompt_variants[%d]", k)
		checkVariantID(errs, seen, p, "prompt variant", v.ID, k)
		s.checkPromptAt(errs, p, v.Prompt())
	}
}

// checkVariantID is checkID for a variant: it also refuses the reserved id OriginalVariant and a ':' (the
// item segment of a variant's cell id is item:variant).
func checkVariantID(errs *Errors, seen map[string]int, path, kind, id string, i int) {
	switch {
	case id == OriginalVariant:
		errs.add(path+".id", "%q is reserved for the item's own wording and the spec's own prompt; choose another id", id)
		return
	case strings.Contains(id, ":"):
		errs.add(path+".id", "%q contains ':'; %s ids may not contain ':' (a variant's cell id segment is item:variant)", id, kind)
	}
	checkID(errs, seen, path, kind, id, i)
}
