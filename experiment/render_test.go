package experiment

import (
	"reflect"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		prompt  Prompt
		persona int
		item    int
		history []Turn
		want    []Message
	}{
		{
			name: "default chat prompt", persona: 0, item: 1,
			want: []Message{
				{Role: "system", Content: " Ann is 30 years old.\nBe honest."},
				{Role: "user", Content: "Q2\nNo\nYes\nAnswer with the number of one option."},
			},
		},
		{
			name: "persona without attributes", persona: 1, item: 1,
			want: []Message{
				{Role: "system", Content: "  is  years old.\nBe honest."},
				{Role: "user", Content: "Q2\nNo\nYes\nAnswer with the number of one option."},
			},
		},
		{
			name:   "normal prompt, literal braces, braces in the question",
			prompt: Prompt{Type: "normal", Template: "{{{question}}} [{answer_options}] {persona_description}"}, persona: 2, item: 0,
			want: []Message{{Role: "user", Content: "{Q1 {x}} [No\nYes] {literal} "}},
		},
		{
			name:   "item options with prepended delimiter",
			prompt: Prompt{Type: "normal", Template: "{question}:{answer_options}"}, persona: 0, item: 2,
			want: []Message{{Role: "user", Content: "Q3: | A | B"}},
		},
		{
			name: "cumulative history is replayed verbatim",
			prompt: Prompt{Type: "chat", Messages: []Message{
				{Role: "system", Content: "{general_instruction}"},
				{Role: "user", Content: "{question}"},
			}},
			persona: 0, item: 2,
			history: []Turn{{User: "Q1 {x}", Assistant: "{answer_options} }} {"}, {User: "Q2", Assistant: "2"}},
			want: []Message{
				{Role: "system", Content: "Be honest."},
				{Role: "user", Content: "Q1 {x}"},
				{Role: "assistant", Content: "{answer_options} }} {"},
				{Role: "user", Content: "Q2"},
				{Role: "assistant", Content: "2"},
				{Role: "user", Content: "Q3"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := minimalSpec()
			s.Prompt = tc.prompt
			if len(tc.history) > 0 {
				s.Run.Cumulative = true
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			c := Cell{Item: tc.item, Persona: tc.persona}
			got, err := s.Render(c, tc.history)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Render =\n%q\nwant\n%q", got, tc.want)
			}
			// Without Validate (a spec fresh from JSON), Render compiles on the fly and agrees.
			s2 := minimalSpec()
			s2.Prompt = tc.prompt
			got2, err := s2.Render(c, tc.history)
			if err != nil || !reflect.DeepEqual(got2, tc.want) {
				t.Errorf("Render without Validate = %q, %v", got2, err)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	s := minimalSpec()
	s.Prompt = Prompt{Type: "normal", Template: "{question}"}
	if _, err := s.Render(Cell{}, []Turn{{User: "a", Assistant: "b"}}); err == nil {
		t.Errorf("history with a normal prompt: want an error")
	}
	if _, err := s.Render(Cell{Item: 9}, nil); err == nil {
		t.Errorf("item out of range: want an error")
	}
	s.Prompt.Template = "{nope}"
	if _, err := s.Render(Cell{}, nil); err == nil || !strings.Contains(err.Error(), "{nope}") {
		t.Errorf("bad template: err = %v", err)
	}
}

// A spec changed after Validate renders the change, not a stale cache.
func TestRenderAfterChange(t *testing.T) {
	s := minimalSpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	s.Questionnaire.Items = []Item{{ID: "n", Text: "New question"}}
	msgs, err := s.Render(Cell{}, nil)
	if err != nil || !strings.HasPrefix(msgs[1].Content, "New question") {
		t.Errorf("Render after change = %q, %v", msgs, err)
	}
}

func TestTemplateParsing(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "{{}}", want: "{}"},
		{in: "a {question} b", want: "a Q b"},
		{in: "{{question}}", want: "{question}"},
		{in: "{{{question}}}", want: "{Q}"},
		{in: "{question", err: "unclosed {"},
		{in: "{ques{tion}", err: "unclosed {"},
		{in: "x } y", err: "single }"},
		{in: "{Question}", err: `did you mean "question"?`},
		{in: "{}", err: "unknown placeholder {}"},
	}
	for _, tc := range tests {
		tmpl, err := parsePromptTemplate(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parse(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parse(%q): %v", tc.in, err)
			continue
		}
		c := &compiled{questions: []string{"Q"}, options: []string{"O"}, personaDesc: []string{"P"}}
		if got := c.render(tmpl, c.questions[0], 0, c.options[0]); got != tc.want {
			t.Errorf("render(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
