package llm

import (
	"strings"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/usage"
)

// priceTable holds OpenAI's standard (non-batch, uncached) list prices in US dollars per million tokens, as
// published on openai.com/api/pricing in August 2025. Embedding models have no output price. Dated snapshots
// priced differently from their alias are listed by their full name.
var priceTable = map[string]experiment.Price{
	"gpt-5":                  {InputPerMTok: 1.25, OutputPerMTok: 10.00},
	"gpt-5-mini":             {InputPerMTok: 0.25, OutputPerMTok: 2.00},
	"gpt-5-nano":             {InputPerMTok: 0.05, OutputPerMTok: 0.40},
	"gpt-4.1":                {InputPerMTok: 2.00, OutputPerMTok: 8.00},
	"gpt-4.1-mini":           {InputPerMTok: 0.40, OutputPerMTok: 1.60},
	"gpt-4.1-nano":           {InputPerMTok: 0.10, OutputPerMTok: 0.40},
	"gpt-4o":                 {InputPerMTok: 2.50, OutputPerMTok: 10.00},
	"gpt-4o-2024-05-13":      {InputPerMTok: 5.00, OutputPerMTok: 15.00},
	"gpt-4o-mini":            {InputPerMTok: 0.15, OutputPerMTok: 0.60},
	"o1":                     {InputPerMTok: 15.00, OutputPerMTok: 60.00},
	"o3":                     {InputPerMTok: 2.00, OutputPerMTok: 8.00},
	"o3-mini":                {InputPerMTok: 1.10, OutputPerMTok: 4.40},
	"o4-mini":                {InputPerMTok: 1.10, OutputPerMTok: 4.40},
	"gpt-3.5-turbo":          {InputPerMTok: 0.50, OutputPerMTok: 1.50},
	"gpt-3.5-turbo-1106":     {InputPerMTok: 1.00, OutputPerMTok: 2.00},
	"gpt-3.5-turbo-0613":     {InputPerMTok: 1.50, OutputPerMTok: 2.00},
	"text-embedding-3-small": {InputPerMTok: 0.02},
	"text-embedding-3-large": {InputPerMTok: 0.13},
}

// PriceFor is the price of model m: m.Price when the spec sets one, else the built-in table's price of m.Name,
// matched exactly or as a dated snapshot of a listed name ("gpt-4o-mini-2024-07-18", "gpt-3.5-turbo-0125").
// ok is false for an unknown model, whose calls then cost 0.
//
// A price section that sets only batch prices (price: {batch_discount: 0.4}) leaves the synchronous price to the
// table.
func PriceFor(m experiment.Model) (experiment.Price, bool) {
	if p := m.Price; p != nil && (p.InputPerMTok != 0 || p.OutputPerMTok != 0 || !p.HasBatchPrice()) {
		return experiment.Price{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok}, true
	}
	if p, ok := priceTable[m.Name]; ok {
		return p, true
	}
	// A snapshot is "<name>-YYYY-MM-DD" or "<name>-MMDD". Trying every cut point from the right picks the longest
	// listed name, so "gpt-4o-mini-2024-07-18" is gpt-4o-mini, never gpt-4o.
	for i := strings.LastIndexByte(m.Name, '-'); i > 0; i = strings.LastIndexByte(m.Name[:i], '-') {
		if p, ok := priceTable[m.Name[:i]]; ok && isSnapshotSuffix(m.Name[i+1:]) {
			return p, true
		}
	}
	return experiment.Price{}, false
}

// isSnapshotSuffix reports "2024-07-18" or "0125".
func isSnapshotSuffix(s string) bool {
	digits := func(s string) bool {
		for _, r := range s {
			if r < '0' || r > '9' {
				return false
			}
		}
		return s != ""
	}
	switch len(s) {
	case 4:
		return digits(s)
	case 10:
		return s[4] == '-' && s[7] == '-' && digits(s[:4]) && digits(s[5:7]) && digits(s[8:])
	}
	return false
}

// Cost is the price of a call with the given usage, rounded once to the picodollar (usage.PerMTok): exact for
// prices of up to 6 decimals per million tokens.
func Cost(p experiment.Price, promptTokens, completionTokens int) usage.USD {
	return usage.PerMTok(promptTokens, p.InputPerMTok, completionTokens, p.OutputPerMTok)
}

// BatchPriceFor is the price of model m's calls through a provider batch: price.batch_input_per_mtok and
// price.batch_output_per_mtok where the spec sets them, else PriceFor's price times price.batch_discount
// (experiment.DefaultBatchDiscount, the providers' 50%, when unset). ok is false when neither is known.
func BatchPriceFor(m experiment.Model) (experiment.Price, bool) {
	base, ok := PriceFor(m)
	if p := m.Price; p != nil && p.BatchInputPerMTok != nil && p.BatchOutputPerMTok != nil {
		ok = true
	}
	return experiment.BatchPrice(base, m.Price), ok
}
