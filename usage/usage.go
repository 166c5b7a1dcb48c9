// Package usage holds Usage, what model calls consumed: tokens and money. Every total in silico (a pass's
// result and heartbeat, the workflow's progress, the store's counts, summary.json, the starter's progress line)
// is a Usage, added up with Add, so there is one definition of what a total contains. Money is a USD, a whole
// number of picodollars, so that totals are the exact sums of the costs they add up.
package usage

// Usage is the tokens and the cost of one or more model calls. The zero value is no usage. In JSON it is
// flattened into the struct that embeds it: prompt_tokens, completion_tokens, cost_usd.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CostUSD          USD `json:"cost_usd"`
	// SavedUSD is what the calls answered from the response cache would have cost: money not spent. Their
	// tokens and cost are not in the fields above.
	SavedUSD USD `json:"saved_usd"`
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.CostUSD += v.CostUSD
	u.SavedUSD += v.SavedUSD
}

// Plus returns u + v.
func (u Usage) Plus(v Usage) Usage {
	u.Add(v)
	return u
}

// Tokens is prompt plus completion tokens.
func (u Usage) Tokens() int { return u.PromptTokens + u.CompletionTokens }
