package experiment

import (
	"slices"
	"testing"
)

func TestMatch(t *testing.T) {
	likert := OptionSet{Options: []Option{
		{ID: "1", Text: "1. Disagree strongly", Weight: 1},
		{ID: "2", Text: "2. Disagree a little", Weight: 2},
		{ID: "3", Text: "3. Neutral", Weight: 3},
		{ID: "4", Text: "4. Agree a little", Weight: 4},
		{ID: "5", Text: "5. Agree strongly", Weight: 5},
	}}
	ipip := OptionSet{Options: []Option{
		{ID: "1", Text: "Very Inaccurate"}, {ID: "2", Text: "Moderately Inaccurate"},
		{ID: "3", Text: "Neither Accurate Nor Inaccurate"}, {ID: "4", Text: "Moderately Accurate"}, {ID: "5", Text: "Very Accurate"},
	}}
	letters := OptionSet{Options: []Option{{ID: "a", Text: "Yes"}, {ID: "b", Text: "No"}, {ID: "c", Text: "I cannot say"}}}
	agree := OptionSet{Options: []Option{{ID: "1", Text: "Agree"}, {ID: "2", Text: "Strongly agree"}, {ID: "3", Text: "Disagree"}}}
	tests := []struct {
		raw   string
		set   OptionSet
		id    string   // "" means unparsed
		cands []string // for unparsed ties
	}{
		{raw: "3", set: likert, id: "3"},
		{raw: " 3 ", set: likert, id: "3"},
		{raw: "3.", set: likert, id: "3"},
		{raw: "3)", set: likert, id: "3"},
		{raw: "(3)", set: likert, id: "3"},
		{raw: "[4]", set: likert, id: "4"},
		{raw: "**3**", set: likert, id: "3"},
		{raw: "**3. Neutral**", set: likert, id: "3"},
		{raw: "`5`", set: likert, id: "5"},
		{raw: "\u201c2\u201d", set: likert, id: "2"},
		{raw: "3. Neutral", set: likert, id: "3"},
		{raw: "Neutral", set: likert, id: "3"},
		{raw: "neutral.", set: likert, id: "3"},
		{raw: "Agree a little", set: likert, id: "4"},
		{raw: "I would say I disagree a little with this.", set: likert, id: "2"},
		{raw: "Answer: 4", set: likert, id: "4"},
		{raw: "My answer is 2 because I rarely do that.", set: likert, id: "2"},
		{raw: "4 - Agree a little", set: likert, id: "4"},
		{raw: "c)", set: likert, id: "3"},
		{raw: "C.", set: likert, id: "3"},
		{raw: "e", set: likert, id: "5"},
		{raw: "f)", set: likert},
		{raw: "I'd pick 4", set: likert, id: "4"},
		{raw: "Somewhere between 2 and 4", set: likert, cands: []string{"2", "4"}},
		{raw: "3.5", set: likert, cands: []string{"3", "5"}},
		{raw: "7", set: likert},
		{raw: "", set: likert},
		{raw: "   \n ", set: likert},
		{raw: "As an AI, I do not have personal opinions.", set: likert},
		{raw: "I cannot answer that.", set: likert},
		{raw: "I'm sorry, but I can't help with that.", set: likert},
		{raw: "Moderately Accurate", set: ipip, id: "4"},
		{raw: "moderately inaccurate", set: ipip, id: "2"},
		{raw: "Very accurate!", set: ipip, id: "5"},
		{raw: "Neither accurate nor inaccurate", set: ipip, id: "3"},
		{raw: "I am very accurate... no, very inaccurate", set: ipip, cands: []string{"1", "5"}},
		{raw: "b)", set: letters, id: "b"},
		{raw: "(A)", set: letters, id: "a"},
		{raw: "A. Yes", set: letters, id: "a"},
		{raw: "I cannot say", set: letters, id: "c"},
		{raw: "No.", set: letters, id: "b"},
		{raw: "Strongly agree", set: agree, id: "2"},
		{raw: "I strongly agree.", set: agree, id: "2"},
		{raw: "disagree", set: agree, id: "3"},
		{raw: "agree", set: agree, id: "1"},
		{raw: "I agree, or maybe disagree", set: agree, cands: []string{"1", "3"}},
		{raw: "> **Answer:** 5", set: likert, id: "5"},
		{raw: "5\n\nI am outgoing.", set: likert, id: "5"},
	}
	for _, tc := range tests {
		got := Match(tc.raw, tc.set)
		want := MatchResult{Status: MatchUnparsed, Candidates: tc.cands}
		if tc.id != "" {
			want = MatchResult{Status: MatchOK, OptionID: tc.id}
		}
		if got.Status != want.Status || got.OptionID != want.OptionID || !slices.Equal(sorted(got.Candidates), sorted(want.Candidates)) {
			t.Errorf("Match(%q) = %+v, want %+v", tc.raw, got, want)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
