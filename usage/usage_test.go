package usage

import "testing"

func TestAddAndPlus(t *testing.T) {
	a := Usage{PromptTokens: 10, CompletionTokens: 2, CostUSD: Dollars(0.5)}
	b := Usage{PromptTokens: 1, CompletionTokens: 3, CostUSD: Dollars(0.25)}
	if got, want := a.Plus(b), (Usage{PromptTokens: 11, CompletionTokens: 5, CostUSD: Dollars(0.75)}); got != want {
		t.Fatalf("Plus = %+v, want %+v", got, want)
	}
	if a != (Usage{PromptTokens: 10, CompletionTokens: 2, CostUSD: Dollars(0.5)}) {
		t.Fatalf("Plus changed its receiver: %+v", a)
	}
	a.Add(b)
	if a != (Usage{PromptTokens: 11, CompletionTokens: 5, CostUSD: Dollars(0.75)}) || a.Tokens() != 16 {
		t.Fatalf("Add gave %+v (tokens %d), want {11 5 0.75} (16)", a, a.Tokens())
	}
}
