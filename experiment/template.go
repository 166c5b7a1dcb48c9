package experiment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/silicolab/silico/suggest"
)

// Placeholders of prompt templates.
const (
	PlaceholderInstruction = "general_instruction"
	PlaceholderPersona     = "persona_description"
	PlaceholderQuestion    = "question"
	PlaceholderOptions     = "answer_options"
)

var promptPlaceholders = []string{PlaceholderInstruction, PlaceholderPersona, PlaceholderQuestion, PlaceholderOptions}

// personaBuiltins always exist in a persona template, empty when the persona does not set them.
var personaBuiltins = []string{"title", "name", "age"}

type segKind uint8

const (
	segLit segKind = iota
	segInstruction
	segPersona
	segQuestion
	segOptions
	segAttr // persona templates only: an attribute, named by text
)

type segment struct {
	kind segKind
	text string // the literal, or the attribute name
}

// template is a parsed template: literals and placeholders. Literal braces are already unescaped.
type template []segment

// parseTemplate splits s into literals and placeholders. known lists the accepted placeholder names; kindOf maps
// a known name to its segment kind.
func parseTemplate(s string, known []string, kindOf func(string) segKind) (template, error) {
	var t template
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t = append(t, segment{kind: segLit, text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '{':
			if i+1 < len(s) && s[i+1] == '{' {
				lit.WriteByte('{')
				i++
				continue
			}
			end := strings.IndexAny(s[i+1:], "{}")
			if end < 0 || s[i+1+end] == '{' {
				return nil, fmt.Errorf("unclosed { at offset %d; write {{ for a literal brace", i)
			}
			name := s[i+1 : i+1+end]
			if !contains(known, name) {
				return nil, fmt.Errorf("unknown placeholder {%s}%s; accepted: %s; write {{ and }} for literal braces",
					name, suggest.DidYouMean(name, known), placeholderList(known))
			}
			flush()
			t = append(t, segment{kind: kindOf(name), text: name})
			i += end + 1
		case '}':
			if i+1 < len(s) && s[i+1] == '}' {
				lit.WriteByte('}')
				i++
				continue
			}
			return nil, fmt.Errorf("single } at offset %d; write }} for a literal brace", i)
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return t, nil
}

func placeholderList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "{" + n + "}"
	}
	return strings.Join(q, ", ")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func promptKind(name string) segKind {
	switch name {
	case PlaceholderInstruction:
		return segInstruction
	case PlaceholderPersona:
		return segPersona
	case PlaceholderQuestion:
		return segQuestion
	default:
		return segOptions
	}
}

func parsePromptTemplate(s string) (template, error) {
	return parseTemplate(s, promptPlaceholders, promptKind)
}

func parsePersonaTemplate(s string, attrs map[string]string) (template, error) {
	known := append([]string(nil), personaBuiltins...)
	for k := range attrs {
		if !contains(known, k) {
			known = append(known, k)
		}
	}
	slices.Sort(known[len(personaBuiltins):])
	return parseTemplate(s, known, func(string) segKind { return segAttr })
}

// DefaultPrompt is the chat prompt of a spec that sets none.
func DefaultPrompt() Prompt {
	return Prompt{Type: PromptChat, Messages: []Message{
		{Role: RoleSystem, Content: "{persona_description}\n{general_instruction}"},
		{Role: RoleUser, Content: "{question}\n{answer_options}\nAnswer with the number of one option."},
	}}
}

// Prompt types and chat roles.
const (
	PromptChat   = "chat"
	PromptNormal = "normal"

	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// compiled holds a spec's parsed templates and everything Render needs that does not depend on the call: persona
// descriptions and {answer_options} per item. It remembers the slices it was built from, so a spec whose items or
// personas were replaced after Validate is compiled afresh instead of rendered stale.
type compiled struct {
	items    []Item
	personas []Persona
	prompt   *Prompt
	variants []PromptVariant
	order    *OrderSettings
	layout   layout

	// prompts are the compiled prompts: the spec's, then each prompt variant's.
	prompts     []compiledPrompt
	hasVariants bool // some item has wording variants
	instruction string
	personaDesc []string
	options     []string // per item
	questions   []string // per item
}

// compiledPrompt is one prompt's parsed messages.
type compiledPrompt struct {
	chat  bool
	roles []string
	msgs  []template
}

func (c *compiled) fresh(s *Spec) bool {
	return c != nil && sameSlice(c.items, s.Questionnaire.Items) && sameSlice(c.personas, s.Personas) &&
		c.prompt == &s.Prompt && sameSlice(c.variants, s.PromptVariants) && c.instruction == s.Questionnaire.Instruction &&
		c.order == s.Questionnaire.Order
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// effectivePrompt is the spec's prompt, or the default one when it sets none.
func (s *Spec) effectivePrompt() Prompt {
	if s.Prompt.Type == "" && s.Prompt.Template == "" && len(s.Prompt.Messages) == 0 {
		return DefaultPrompt()
	}
	return s.Prompt
}

// compile parses every template of the spec. Errors name the field of the template at fault.
func (s *Spec) compile() (*compiled, Errors) {
	var errs Errors
	c := &compiled{items: s.Questionnaire.Items, personas: s.Personas, prompt: &s.Prompt, variants: s.PromptVariants,
		instruction: s.Questionnaire.Instruction, order: s.Questionnaire.Order, layout: s.computeLayout()}
	c.prompts = append(c.prompts, compilePrompt(&errs, "prompt", s.effectivePrompt()))
	for k, v := range s.PromptVariants {
		c.prompts = append(c.prompts, compilePrompt(&errs, fmt.Sprintf("prompt_variants[%d]", k), v.Prompt()))
	}
	c.personaDesc = make([]string, len(s.Personas))
	for i, per := range s.Personas {
		src := per.Template
		if src == "" {
			src = DefaultPersonaTemplate
		}
		t, err := parsePersonaTemplate(src, per.Attributes)
		if err != nil {
			errs.add(fmt.Sprintf("personas[%d].template", i), "%v", err)
			continue
		}
		var b strings.Builder
		for _, seg := range t {
			if seg.kind == segLit {
				b.WriteString(seg.text)
			} else {
				b.WriteString(per.Attributes[seg.text])
			}
		}
		c.personaDesc[i] = b.String()
	}
	c.options = make([]string, len(s.Questionnaire.Items))
	c.questions = make([]string, len(s.Questionnaire.Items))
	// Items without options of their own share one rendering: an item bank of 100,000 items would otherwise
	// hold 100,000 copies of the same text.
	shared := s.Questionnaire.Options.Render()
	for i, it := range s.Questionnaire.Items {
		c.options[i] = shared
		if it.Options != nil {
			c.options[i] = it.Options.Render()
		}
		c.questions[i] = it.Text
		c.hasVariants = c.hasVariants || len(it.Variants) > 0
	}
	return c, errs
}

// compilePrompt parses prompt p, whose fields are at path.
func compilePrompt(errs *Errors, path string, p Prompt) compiledPrompt {
	var cp compiledPrompt
	switch p.Type {
	case PromptChat:
		cp.chat = true
		for i, m := range p.Messages {
			t, err := parsePromptTemplate(m.Content)
			if err != nil {
				errs.add(fmt.Sprintf("%s.messages[%d].content", path, i), "%v", err)
			}
			cp.roles = append(cp.roles, m.Role)
			cp.msgs = append(cp.msgs, t)
		}
	case PromptNormal:
		t, err := parsePromptTemplate(p.Template)
		if err != nil {
			errs.add(path+".template", "%v", err)
		}
		cp.roles = []string{RoleUser}
		cp.msgs = []template{t}
	}
	return cp
}

// Render joins the option texts with the delimiter ("\n" when empty), as {answer_options} shows them.
func (o OptionSet) Render() string {
	d := o.Delimiter
	if d == "" {
		d = "\n"
	}
	var b strings.Builder
	for i, opt := range o.Options {
		if i > 0 || o.PrependDelimiter {
			b.WriteString(d)
		}
		b.WriteString(opt.Text)
	}
	return b.String()
}

// render fills template t for a question and persona, opts standing for {answer_options}.
func (c *compiled) render(t template, question string, persona int, opts string) string {
	n := 0
	for _, seg := range t {
		n += len(c.value(seg, question, persona, opts))
	}
	var b strings.Builder
	b.Grow(n)
	for _, seg := range t {
		b.WriteString(c.value(seg, question, persona, opts))
	}
	return b.String()
}

func (c *compiled) value(seg segment, question string, persona int, opts string) string {
	switch seg.kind {
	case segInstruction:
		return c.instruction
	case segPersona:
		return c.personaDesc[persona]
	case segQuestion:
		return question
	case segOptions:
		return opts
	default:
		return seg.text
	}
}

// Turn is one earlier question and answer of a persona, replayed in cumulative mode. User is the user message as
// it was sent, Assistant the model's raw answer; neither is templated again.
type Turn struct {
	User, Assistant string
}

// renderer returns the compiled templates of s: those Validate stored when they still match s, or fresh ones.
func (s *Spec) renderer() (*compiled, error) {
	if s.rt.fresh(s) {
		return s.rt, nil
	}
	c, errs := s.compile()
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// Render builds the messages of cell c. With a history (cumulative mode) the messages are the system message,
// then a user and an assistant message per turn, then the rest of the prompt's messages for the current item.
// A normal prompt is one user message. Render is safe for concurrent use once Validate has succeeded (it then
// uses templates compiled once); on a spec that was not validated it compiles them on every call.
func (s *Spec) Render(c Cell, history []Turn) ([]Message, error) {
	rt, err := s.renderer()
	if err != nil {
		return nil, err
	}
	if c.Item < 0 || c.Item >= len(rt.questions) || c.Persona < 0 || c.Persona >= len(rt.personaDesc) ||
		c.Variant < 0 || c.Variant > len(s.Questionnaire.Items[c.Item].Variants) ||
		c.PromptVariant < 0 || c.PromptVariant >= len(rt.prompts) {
		return nil, fmt.Errorf("experiment: render: cell %+v out of range", c)
	}
	// A variant's {question} is its own text; the item's is compiled once.
	q := rt.questions[c.Item]
	if c.Variant > 0 {
		q = s.Questionnaire.Items[c.Item].Variants[c.Variant-1].Text
	}
	pr := &rt.prompts[c.PromptVariant]
	// Items shown as written share the rendering compiled once; any other order renders the cell's own.
	opts := rt.options[c.Item]
	if s.OrderFor(c.Item).Mode != OrderAsWritten {
		opts = s.Shown(c).Set.Render()
	}
	if len(history) == 0 {
		out := make([]Message, len(pr.msgs))
		for i, t := range pr.msgs {
			out[i] = Message{Role: pr.roles[i], Content: rt.render(t, q, c.Persona, opts)}
		}
		rt.attachImages(out, 0, c)
		s.instruct(c, out)
		return out, nil
	}
	if !pr.chat || len(pr.msgs) < 2 || pr.roles[0] != RoleSystem {
		return nil, fmt.Errorf("experiment: render: a history needs a chat prompt that starts with a system message")
	}
	out := make([]Message, 0, len(pr.msgs)+2*len(history))
	out = append(out, Message{Role: RoleSystem, Content: rt.render(pr.msgs[0], q, c.Persona, opts)})
	for _, h := range history {
		out = append(out, Message{Role: RoleUser, Content: h.User}, Message{Role: RoleAssistant, Content: h.Assistant})
	}
	for i := 1; i < len(pr.msgs); i++ {
		out = append(out, Message{Role: pr.roles[i], Content: rt.render(pr.msgs[i], q, c.Persona, opts)})
	}
	rt.attachImages(out, 2*len(history), c)
	s.instruct(c, out)
	return out, nil
}

// instruct appends what cell c's answer mode needs the model to be told to the last user message of out: under
// mode verbalized, VerbalizedInstruction after a blank line (the schema alone constrains the output, but a server
// that compiles it to a grammar never shows the model what the numbers mean). Other modes add nothing.
func (s *Spec) instruct(c Cell, out []Message) {
	if s.CellAnswer(c).Mode != AnswerVerbalized {
		return
	}
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == RoleUser {
			// The ids the cell shows, as its schema lists them (CallParams).
			out[i].Content += "\n\n" + VerbalizedInstruction(s.Shown(c).Set)
			return
		}
	}
}

// PersonaDescription is persona p's template filled with its attributes. It is empty when the template is invalid.
func (s *Spec) PersonaDescription(p int) string {
	rt, err := s.renderer()
	if err != nil || p < 0 || p >= len(rt.personaDesc) {
		return ""
	}
	return rt.personaDesc[p]
}
