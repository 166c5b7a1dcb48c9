package specfile

import (
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestOptionForms(t *testing.T) {
	head := "name: o\nmodels: [{name: m}]\npersonas: [{id: p}]\nquestionnaire:\n  items: [Q1, {text: Q2, options: [Yes, No]}]\n  options:\n"
	tests := []struct {
		name     string
		options  string
		want     string // rendered {answer_options} of item 0
		ids      string
		weights  []int
		ignored  int // index of the option ignored for scale, -1 none
		wantItem string
	}{
		{name: "list", options: "    - {id: a, text: Low, weight: 0}\n    - {id: b, text: High, weight: 9, ignored_for_scale: true}\n",
			want: "Low\nHigh", ids: "a,b", weights: []int{0, 9}, ignored: 1},
		{name: "list of texts", options: "    - Low\n    - High\n", want: "Low\nHigh", ids: "1,2", weights: []int{1, 2}, ignored: -1},
		{name: "map in file order", options: "    \"5\": {text: Five, weight: 5}\n    \"1\": {text: One, weight: 1}\n    x: Other\n",
			want: "Five\nOne\nOther", ids: "5,1,x", weights: []int{5, 1, 3}, ignored: -1},
		{name: "set with delimiter", options: "    delimiter: \" / \"\n    prepend_delimiter: true\n    options: {\"1\": {text: One}, \"2\": {text: Two}}\n",
			want: " / One / Two", ids: "1,2", weights: []int{1, 2}, ignored: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(head+tc.options), "o.yaml", ".")
			if err != nil {
				t.Fatal(err)
			}
			o := s.OptionsFor(0)
			if got := o.Render(); got != tc.want {
				t.Errorf("options render %q, want %q", got, tc.want)
			}
			var ids []string
			for i, opt := range o.Options {
				ids = append(ids, opt.ID)
				if opt.Weight != tc.weights[i] || opt.IgnoredForScale != (i == tc.ignored) {
					t.Errorf("option %d = %+v", i, opt)
				}
			}
			if got := strings.Join(ids, ","); got != tc.ids {
				t.Errorf("ids %q, want %q", got, tc.ids)
			}
			if got := s.OptionsFor(1).Render(); got != "Yes\nNo" {
				t.Errorf("item options render %q", got)
			}
			if s.Questionnaire.Items[0].ID != "1" || s.Questionnaire.Items[1].ID != "2" {
				t.Errorf("default item ids: %+v", s.Questionnaire.Items)
			}
		})
	}
}

func TestJSONSpecPositions(t *testing.T) {
	doc := `{
  "name": "j",
  "models": [{"id": "a", "name": "m"},
             {"id": "b", "name": "n", "rpm": -1}],
  "personas": [{"id": "p", "attributes": {"age": 30, "vip": true}}],
  "questionnaire": {"options": [{"id": "1", "text": "Yes"}], "items": [{"text": "Q"}]},
  "run": {"on_errors": "raise"}
}`
	_, err := Parse([]byte(doc), "s.json", ".")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"s.json:4:", "models[1].rpm: -1 is negative", "s.json:7:", `run.on_errors: unknown key "on_errors" (did you mean "on_error"?)`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	s, err := Parse([]byte(strings.Replace(strings.Replace(doc, `"on_errors"`, `"on_error"`, 1), `"rpm": -1`, `"rpm": 1`, 1)), "s.json", ".")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Personas[0].Attributes; got["age"] != "30" || got["vip"] != "true" {
		t.Errorf("attributes = %v, want strings", got)
	}
}

func TestRenderConcurrent(t *testing.T) {
	s, err := Load("testdata/ipip50.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s.Render(s.Cell(7), nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range s.NumCells() {
				if _, err := s.Render(s.Cell(i), nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, _ := s.Render(s.Cell(7), nil)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("render changed")
	}
}
