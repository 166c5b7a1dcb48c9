package report

import (
	"strconv"
	"strings"

	"github.com/silicolab/silico/design"
)

// orderTable is the option-order section of one model: its order_bias.csv line over all items, open, and its
// item lines folded beneath.
type orderTable struct {
	Model string
	All   orderRow
	Items []orderRow
}

// orderRow is one line of order_bias.csv as the report shows it; Key is model/item for data-key.
type orderRow struct {
	Key, Item, Scale string
	N                int
	// Shares are the shares of the answers by shown position, 1 first, as percentages with one decimal.
	Shares string
	// AsWritten, Reversed and Shuffled are the mean option weights of the answers per order.
	AsWritten, Reversed, Shuffled           *float64
	WeightDiff, PrimacyRecency, FirstEffect design.Interval
	NAsWritten, NReversed, NShuffled        int
}

// orderTables groups the order-bias rows by model, in their order (models sorted, the all line last of each).
func orderTables(rows []design.OrderBiasRow) []orderTable {
	var out []orderTable
	idx := map[string]int{}
	for _, r := range rows {
		i, ok := idx[r.Model]
		if !ok {
			i = len(out)
			idx[r.Model] = i
			out = append(out, orderTable{Model: r.Model})
		}
		v := orderRow{Key: r.Model + "/" + r.Item, Item: r.Item, Scale: r.Scale, N: r.N, Shares: shares(r.PositionShares),
			AsWritten: r.WeightOrder[0], Reversed: r.WeightOrder[1], Shuffled: r.WeightOrder[2],
			NAsWritten: r.NOrder[0], NReversed: r.NOrder[1], NShuffled: r.NOrder[2],
			WeightDiff: r.WeightDiff, PrimacyRecency: r.PrimacyRecency, FirstEffect: r.FirstEffect}
		if r.Item == design.AllItems {
			out[i].All = v
		} else {
			out[i].Items = append(out[i].Items, v)
		}
	}
	return out
}

// shares writes the position shares as percentages, position 1 first.
func shares(p []float64) string {
	parts := make([]string, len(p))
	for i, v := range p {
		parts[i] = strconv.Itoa(i+1) + ": " + strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
	}
	return strings.Join(parts, " · ")
}

// interval writes a statistic with its interval as "v [lo, hi]", "—" for a missing part.
func interval(iv design.Interval) string {
	s := fmtStat(iv.Value)
	if iv.Lo != nil && iv.Hi != nil {
		s += " [" + fmtStat(iv.Lo) + ", " + fmtStat(iv.Hi) + "]"
	}
	return s
}
