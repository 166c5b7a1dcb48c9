package results

import (
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
)

// humanSide computes every human figure of reference.csv and reference_scales.csv. A file of answers carries
// its respondents (experiment.Respondents): distributions, means, entropies and α/ω come from them, with their
// survey weights, by the code that computes the model's (expectedScore, ScaleReliabilityWeighted), and a
// resample or a split half is just another list of respondents. A file of counts has no respondents: its
// distributions are the counts over their total and it has no α/ω (a spec resolved before respondents were
// inlined carries its α/ω in Reference.Scales, which are read as they are).
type humanSide struct {
	spec *experiment.Spec
	ref  *experiment.Reference
	rs   *experiment.Respondents
	// col[it] is the column of questionnaire item it in rs.Answers, -1 where the file has none.
	col []int
	// members[g] are the respondents of group label g, in file order.
	members map[string][]int
	// counts are a file of counts' counts by item id and group.
	counts map[[2]string][]int
	// scales are precomputed α/ω by scale and group (a spec without respondents).
	scales map[[2]string]experiment.ReferenceScale
	// score[it][k] is the score of option k of item it, psychometrics.Missing where it has none.
	score [][]float64
}

func newHumanSide(s *experiment.Spec, groups []string) *humanSide {
	ref := s.Reference
	h := &humanSide{spec: s, ref: ref, rs: ref.Respondents, counts: map[[2]string][]int{},
		scales: map[[2]string]experiment.ReferenceScale{}}
	h.score = make([][]float64, len(s.Questionnaire.Items))
	for it := range s.Questionnaire.Items {
		for _, o := range s.OptionsFor(it).Options {
			v := psychometrics.Missing
			if sc, ok := s.CellScore(experiment.Cell{Item: it}, o.ID); ok {
				v = float64(sc)
			}
			h.score[it] = append(h.score[it], v)
		}
	}
	if h.rs == nil {
		for _, c := range ref.Counts {
			h.counts[[2]string{c.Item, c.Group}] = c.Counts
		}
		for _, sc := range ref.Scales {
			h.scales[[2]string{sc.Scale, sc.Group}] = sc
		}
		return h
	}
	h.col = make([]int, len(s.Questionnaire.Items))
	for it, item := range s.Questionnaire.Items {
		h.col[it] = -1
		for j, id := range h.rs.Items {
			if id == item.ID {
				h.col[it] = j
				break
			}
		}
	}
	h.members = map[string][]int{}
	for _, g := range groups {
		var m []int
		for i := range h.rs.Len() {
			if h.rs.InGroup(ref.Groups, i, g) {
				m = append(m, i)
			}
		}
		h.members[g] = m
	}
	return h
}

// dist returns the humans' distribution on item it over the respondents units (indices into the respondents,
// repeats counting again): each option's share of the weight of those who answered; n is their head count. nil
// when none answered.
func (h *humanSide) dist(it int, units []int) (p []float64, n int) {
	c := h.col[it]
	if c < 0 {
		return nil, 0
	}
	p = make([]float64, len(h.score[it]))
	var total float64
	for _, i := range units {
		if k := h.rs.Answers[i][c]; k >= 0 {
			w := h.rs.Weight(i)
			p[k] += w
			total += w
			n++
		}
	}
	if n == 0 {
		return nil, 0
	}
	for k := range p {
		p[k] /= total
	}
	return p, n
}

// groupDist is the humans' distribution on item it in group g: of the group's respondents, or from the counts.
func (h *humanSide) groupDist(it int, g string) ([]float64, int) {
	if h.rs != nil {
		return h.dist(it, h.members[g])
	}
	c := h.counts[[2]string{h.spec.Questionnaire.Items[it].ID, g}]
	if len(c) != len(h.score[it]) {
		return nil, 0
	}
	n := 0
	for _, v := range c {
		n += v
	}
	if n == 0 {
		return nil, 0
	}
	p := make([]float64, len(c))
	for k, v := range c {
		p[k] = float64(v) / float64(n)
	}
	return p, n
}

// headCount is how many people of group g stand behind the human side of a line that averages items: with
// respondents, those of the group who answered at least one of the items; a file of counts does not say which of
// its counts are the same people, so there it is the largest head count of one item (at least that many), read
// from rows, the items' reference.csv lines of the group (nil where an item has none).
func (h *humanSide) headCount(items []int, g string, rows []*ReferenceRow) int {
	n := 0
	if h.rs == nil {
		for _, r := range rows {
			if r != nil {
				n = max(n, r.Humans)
			}
		}
		return n
	}
	for _, i := range h.members[g] {
		for _, it := range items {
			if c := h.col[it]; c >= 0 && h.rs.Answers[i][c] >= 0 {
				n++
				break
			}
		}
	}
	return n
}

// reliability is α and ω of the respondents units (repeats counting again) on items: the units × items matrix
// of their scores (reverse-keyed items reversed, options ignored for scale and missing answers missing), each
// row with its respondent's weight. ok is false without respondents.
func (h *humanSide) reliability(items []int, units []int) (psychometrics.Reliability, bool) {
	if h.rs == nil {
		return psychometrics.Reliability{}, false
	}
	cells := make([]float64, len(units)*len(items))
	x := make([][]float64, len(units))
	var w []float64
	if h.rs.Weights != nil {
		w = make([]float64, len(units))
	}
	for r, i := range units {
		row := cells[r*len(items) : (r+1)*len(items)]
		for j, it := range items {
			row[j] = psychometrics.Missing
			if c := h.col[it]; c >= 0 {
				if k := h.rs.Answers[i][c]; k >= 0 {
					row[j] = h.score[it][k]
				}
			}
		}
		x[r] = row
		if w != nil {
			w[r] = h.rs.Weights[i]
		}
	}
	return psychometrics.ScaleReliabilityWeighted(x, w), true
}
