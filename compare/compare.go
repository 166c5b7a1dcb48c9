// Package compare sets two runs side by side, cell by cell: a retest of the same spec, the same spec some weeks
// later (drift), or two models under one model id. Cells are matched by their whole identity, experiment.CellKey
// (model and seed as the Pairing pairs them; item, wording, prompt, persona, probe and shown option order equal),
// so a cell of A meets the one cell of B that asked the same question the same way; per model and item, and per
// model over all its items, it gives the distance
// between the two runs' answer distributions (W1, JSD), the mean score shift from A to B with a bootstrap
// interval over personas, the exact agreement of the written answers, Cohen's κ, the ICC(2,1) of the cells'
// expected scores, and how many cells matched. docs/architecture.md defines every number.
package compare

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/store"
)

// AllItems is the item column of a model's row over all its items.
const AllItems = experiment.Overall

// Scopes of a Row: one item, or all the items of a model.
const (
	ScopeItem  = "item"
	ScopeModel = "model"
)

// ErrNoCommonCells is returned when no cell has a record in both runs.
var ErrNoCommonCells = errors.New("compare: the runs have no cell in common")

// Options are the bootstrap's parameters and any model pairs named by hand. SpecOptions gives the bootstrap
// settings of a spec (analysis.bootstrap, its defaults in package experiment).
type Options struct {
	// Samples is the number of bootstrap resamples; 0 turns the intervals off.
	Samples int
	// Seed seeds the resampling; each row's draws are a pure function of (Seed, model, item), so a rerun gives
	// the same intervals and rows do not depend on each other.
	Seed int64
	// Models, when not empty, pairs models by hand (see PairModels).
	Models []ModelPair
}

// SpecOptions are the bootstrap settings of spec s: its analysis.bootstrap, defaults filled in.
func SpecOptions(s *experiment.Spec) Options {
	n, seed := s.Analysis.Bootstrap.Resolve()
	return Options{Samples: n, Seed: seed}
}

// Side is one run as compared: its id, its spec and what each of its recorded cells answered.
type Side struct {
	ID   string
	Spec *experiment.Spec
	// cells by cell id; order is the cell ids in submission order.
	cells map[string]*cell
	order []string
}

// cell is what a comparison keeps of one recorded cell.
type cell struct {
	key experiment.CellKey
	// options are the ids of the item's options (spec.OptionsFor order).
	options []string
	// option is the written answer of an ok cell, "" otherwise.
	option string
	// spec and it are the cell's spec and item index there, for the item's scoring.
	spec *experiment.Spec
	it   int
	// pmf is results.CellPMF of the row, nil without one.
	pmf []float64
	// score is the expected score of pmf with the cell's scoring (results.ExpectedScore): Σ p·score over the
	// scored options, reversed items and negated wordings reversed; for a cell without probabilities the written
	// option's score. nil without one.
	score *float64
	// served and fingerprint are what the provider said it served the cell with.
	served, fingerprint string
}

// Load reads run id's records from src and keeps, per recorded cell, what the comparison needs. A cell without a
// record is not part of the run here (it counts as only in the other run when that one has it).
func Load(ctx context.Context, src results.Source, spec *experiment.Spec, id string) (*Side, error) {
	if spec == nil {
		return nil, fmt.Errorf("compare: load %s: nil spec", id)
	}
	if spec.IsEmbed() {
		return nil, fmt.Errorf("compare: run %s is a kind: embed run: its cells are vectors, with no answers to compare", id)
	}
	s := &Side{ID: id, Spec: spec, cells: map[string]*cell{}}
	n := spec.NumCells()
	opts := make([][]string, len(spec.Questionnaire.Items))
	for it := range opts {
		for _, o := range spec.OptionsFor(it).Options {
			opts[it] = append(opts[it], o.ID)
		}
	}
	err := src.Scan(ctx, id, func(r store.Record) error {
		if r.Index < 0 || r.Index >= n {
			return fmt.Errorf("record of cell %d, but the spec has %d cells: is this the run's spec?", r.Index, n)
		}
		row := results.BuildRow(spec, id, r)
		sc := spec.Cell(r.Index)
		c := &cell{key: spec.Key(sc), options: opts[sc.Item], spec: spec, it: sc.Item}
		if row.Status == store.StatusOK {
			c.option = row.OptionID
		}
		if p, _, ok := results.CellPMF(spec, &row); ok {
			c.pmf = p
			c.score = results.ExpectedScore(spec, sc, p)
		}
		c.served, c.fingerprint = row.ServedModel, row.SystemFingerprint
		if _, dup := s.cells[row.CellID]; !dup {
			s.order = append(s.order, row.CellID)
		}
		s.cells[row.CellID] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compare: read run %s: %w", id, err)
	}
	return s, nil
}

// Comparison is the result of Compare: per model pair, one Row per item with a cell recorded in either run,
// then a row over all its items (Scope ScopeModel, Item AllItems); model pairs in A's spec order, then the models
// only B has, items in A's spec order, then those only B's spec has.
type Comparison struct {
	A, B    string
	Options Options
	Pairing Pairing
	Rows    []Row
}

// Row is one line of compare.csv. Pointers are nil where the statistic is undefined (see docs/architecture.md).
type Row struct {
	// Model is the model id in run A and ModelB its partner's in run B (see Pairing); either is "" for a model
	// with no partner.
	Model, ModelB string
	Item          string
	Scope         string
	// MatchedOn names the factors of the cell identity (experiment.CellKey) the row's cells were matched on:
	// model, seed, item and persona always, then those the item has in either run's spec (identityFactors'
	// order): variant (wording variants), prompt_variant, probe (a verbalized probe), order (an order mode
	// other than as_written). A model's row lists those of any of its items.
	MatchedOn []string
	// Matched cells have a record in both runs; OnlyA and OnlyB in one of them only.
	Matched, OnlyA, OnlyB int
	// Distributions: matched cells with an answer distribution in both runs; W1 and JSD between the two runs'
	// mean distributions over them (for the model row: the mean of its items' values over the items that have
	// one; Items counts those items).
	Distributions int
	Items         int
	W1, JSD       *float64
	// Scored: matched cells with an expected score in both runs; MeanA and MeanB their means, Shift = MeanB −
	// MeanA, ShiftLo and ShiftHi its 95 % bootstrap interval; ICC the ICC(2,1) of the scored pairs. Personas
	// counts the personas among the scored cells.
	Scored           int
	Personas         int
	MeanA, MeanB     *float64
	Shift            *float64
	ShiftLo, ShiftHi *float64
	ICC              *float64
	// Answered: matched cells answered ok in both runs; Agree how many of them wrote the same option;
	// Agreement = Agree / Answered; Kappa Cohen's κ over them.
	Answered, Agree int
	Agreement       *float64
	Kappa           *float64
	// ServedA, ServedB, FingerprintA and FingerprintB are the distinct served models and system fingerprints of
	// the row's matched cells in each run, space-separated in order of first appearance; empty where the
	// provider said none. ServedChanged and FingerprintChanged say whether the two runs' sets of distinct values
	// differ, nil when either run has none (unknown, not unchanged).
	ServedA, ServedB                  string
	FingerprintA, FingerprintB        string
	ServedChanged, FingerprintChanged *bool
	// seeds are the seed pairs as compare.csv writes them.
	seeds string
	// chance is κ's chance agreement p_e over the Answered cells of an item row.
	chance float64
}

// pooledKappa is the κ of a model's row from its item rows: the observed agreement over all their answered
// cells against the chance agreement taken within each item, Σ_i n_i p_e,i / Σ_i n_i (answers to different
// items cannot agree, by chance or not). nil without answered cells or when that chance agreement is 1.
func pooledKappa(items []Row) *float64 {
	var n, agree, pe float64
	for _, r := range items {
		n += float64(r.Answered)
		agree += float64(r.Agree)
		pe += float64(r.Answered) * r.chance
	}
	if n == 0 {
		return nil
	}
	k, err := psychometrics.KappaOf(agree/n, pe/n)
	if err != nil {
		return nil
	}
	return ptr(k)
}

// pair is a matched cell: its record in A and in B.
type pair struct{ a, b *cell }

// The factors of a cell's identity as MatchedOn names them; the first four always identify a cell.
var identityFactors = []string{"model", "seed", "item", "persona", "variant", "prompt_variant", "probe", "order"}

// factorsOf says which identity factors item id has in spec s (nil when s has no such item): those beyond the
// first four that take a value other than the spec as written (its own wording and prompt, the main call, the
// options as written), in identityFactors' order.
func factorsOf(s *experiment.Spec, index map[string]int, id string) map[string]bool {
	it, ok := index[id]
	if !ok {
		return nil
	}
	return map[string]bool{"variant": s.Variants(it) > 1, "prompt_variant": s.NumPromptVariants() > 1,
		"probe": s.Probes() > 1, "order": s.OrderFor(it).Mode != experiment.OrderAsWritten}
}

// matchedOn is identityFactors restricted to the first four and those set in any of has.
func matchedOn(has ...map[string]bool) []string {
	var out []string
	for i, f := range identityFactors {
		in := i < 4
		for _, h := range has {
			in = in || h[f]
		}
		if in {
			out = append(out, f)
		}
	}
	return out
}

// Label names the row's model pair (ModelPair.Label).
func (r Row) Label() string { return ModelPair{r.Model, r.ModelB}.Label() }

// matchKey is what a cell of A and a cell of B share when they are set side by side: their model pair and seed
// pair (indices into the Pairing) and the rest of their CellKey (its Model and Seed zero).
type matchKey struct {
	model, seed int
	rest        experiment.CellKey
}

// keys maps each cell id of s to its matchKey under the pairing (side picks A's or B's ids); cells of a model or
// seed with no partner have none.
func keys(s *Side, p Pairing, sideB bool) map[string]matchKey {
	model, seed := map[string]int{}, map[int64]int{}
	for i, m := range p.Models {
		id := m.A
		if sideB {
			id = m.B
		}
		if id != "" {
			model[id] = i
		}
	}
	for i, sd := range p.Seeds {
		if sideB {
			seed[sd.B] = i
		} else {
			seed[sd.A] = i
		}
	}
	out := make(map[string]matchKey, len(s.cells))
	for id, c := range s.cells {
		m, ok1 := model[c.key.Model]
		sd, ok2 := seed[c.key.Seed]
		if ok1 && ok2 {
			rest := c.key
			rest.Model, rest.Seed = "", 0
			out[id] = matchKey{m, sd, rest}
		}
	}
	return out
}

// Compare sets run b beside run a, their cells paired by Pair (opt.Models the pairs named). It fails when the
// models or seeds cannot be paired, with ErrNoCommonCells when no cell has a partner, and when a matched item has
// other options in b than in a (the distributions would not be over the same options).
func Compare(a, b *Side, opt Options) (*Comparison, error) {
	pairing, err := Pair(a.Spec, b.Spec, opt.Models)
	if err != nil {
		return nil, err
	}
	type key struct {
		model int
		item  string
	}
	pairs := map[key][]pair{}
	onlyA, onlyB := map[key]int{}, map[key]int{}
	ka, kb := keys(a, pairing, false), keys(b, pairing, true)
	inB := make(map[matchKey]string, len(kb))
	for id, k := range kb {
		inB[k] = id
	}
	// A model with no partner has no key: its cells are only in its run, under its pair's index.
	pairOf := func(s *Side, id string, sideB bool) int {
		m := s.cells[id].key.Model
		return slices.IndexFunc(pairing.Models, func(p ModelPair) bool { return (sideB && p.B == m) || (!sideB && p.A == m) })
	}
	matchedB := map[string]bool{}
	matched := 0
	for _, id := range a.order {
		ca := a.cells[id]
		k, ok := ka[id]
		idB, found := inB[k]
		if !ok || !found {
			onlyA[key{pairOf(a, id, false), ca.key.Item}]++
			continue
		}
		cb := b.cells[idB]
		if !slices.Equal(ca.options, cb.options) {
			return nil, fmt.Errorf("compare: item %s has options %v in run %s but %v in run %s: the answers are not over "+
				"the same options", ca.key.Item, ca.options, a.ID, cb.options, b.ID)
		}
		pairs[key{k.model, ca.key.Item}] = append(pairs[key{k.model, ca.key.Item}], pair{ca, cb})
		matchedB[idB] = true
		matched++
	}
	for _, id := range b.order {
		if !matchedB[id] {
			onlyB[key{pairOf(b, id, true), b.cells[id].key.Item}]++
		}
	}
	if matched == 0 {
		return nil, fmt.Errorf("%w: %s has %d recorded cells, %s %d, and no cell is in both (%s; items and personas by id)",
			ErrNoCommonCells, a.ID, len(a.order), b.ID, len(b.order), pairing)
	}
	out := &Comparison{A: a.ID, B: b.ID, Options: opt, Pairing: pairing}
	seeds := pairing.SeedPairs(" ")
	// Items in A's spec order, then those only B's spec has; each item's identity factors in either spec.
	var items []string
	index := [2]map[string]int{{}, {}}
	for i, s := range []*experiment.Spec{a.Spec, b.Spec} {
		for k, it := range s.Questionnaire.Items {
			if _, dup := index[i][it.ID]; dup {
				continue
			}
			index[i][it.ID] = k
			if _, inA := index[0][it.ID]; i == 0 || !inA {
				items = append(items, it.ID)
			}
		}
	}
	factors := map[string][]map[string]bool{}
	for _, it := range items {
		factors[it] = []map[string]bool{factorsOf(a.Spec, index[0], it), factorsOf(b.Spec, index[1], it)}
	}
	for mi, mp := range pairing.Models {
		all := Row{Model: mp.A, ModelB: mp.B, Item: AllItems, Scope: ScopeModel, seeds: seeds}
		label := mp.Label()
		var allPairs []pair
		var w1s, jsds []float64
		var allFactors []map[string]bool
		seen := false
		itemRows := 0
		for _, it := range items {
			k := key{mi, it}
			ps := pairs[k]
			if len(ps) == 0 && onlyA[k] == 0 && onlyB[k] == 0 {
				continue
			}
			seen = true
			r := Row{Model: mp.A, ModelB: mp.B, Item: it, Scope: ScopeItem, MatchedOn: matchedOn(factors[it]...),
				OnlyA: onlyA[k], OnlyB: onlyB[k], seeds: seeds}
			allFactors = append(allFactors, factors[it]...)
			r.fill(ps, opt, label, it)
			itemRows++
			r.distances(ps)
			if r.W1 != nil {
				w1s = append(w1s, *r.W1)
			}
			if r.JSD != nil {
				jsds = append(jsds, *r.JSD)
			}
			out.Rows = append(out.Rows, r)
			allPairs = append(allPairs, ps...)
			all.OnlyA += r.OnlyA
			all.OnlyB += r.OnlyB
			all.Distributions += r.Distributions
		}
		if !seen {
			continue
		}
		all.MatchedOn = matchedOn(allFactors...)
		all.fill(allPairs, opt, label, AllItems)
		all.Kappa = pooledKappa(out.Rows[len(out.Rows)-itemRows:])
		all.Items = len(w1s)
		all.W1, all.JSD = mean(w1s), mean(jsds)
		out.Rows = append(out.Rows, all)
	}
	return out, nil
}

// fill sets the counts, the score statistics and the agreement of r from its matched cells ps, κ over the
// written options (which a model's row replaces with pooledKappa).
func (r *Row) fill(ps []pair, opt Options, label, item string) {
	r.Matched = len(ps)
	var x [][]float64
	var sa, sb, diffs []float64
	var personas []string
	persona := map[string]int{}
	var cluster [][]float64 // per persona, the B − A differences of its scored cells
	var ca, cb []string
	var servedA, servedB, fpA, fpB []string
	for _, p := range ps {
		servedA, servedB = addDistinct(servedA, p.a.served), addDistinct(servedB, p.b.served)
		fpA, fpB = addDistinct(fpA, p.a.fingerprint), addDistinct(fpB, p.b.fingerprint)
		if p.a.option != "" && p.b.option != "" {
			r.Answered++
			if p.a.option == p.b.option {
				r.Agree++
			}
			ca, cb = append(ca, p.a.option), append(cb, p.b.option)
		}
		if p.a.score == nil || p.b.score == nil {
			continue
		}
		va, vb := *p.a.score, *p.b.score
		x = append(x, []float64{va, vb})
		sa, sb, diffs = append(sa, va), append(sb, vb), append(diffs, vb-va)
		i, ok := persona[p.a.key.Persona]
		if !ok {
			i = len(personas)
			persona[p.a.key.Persona] = i
			personas = append(personas, p.a.key.Persona)
			cluster = append(cluster, nil)
		}
		cluster[i] = append(cluster[i], vb-va)
	}
	r.ServedA, r.ServedB = strings.Join(servedA, " "), strings.Join(servedB, " ")
	r.FingerprintA, r.FingerprintB = strings.Join(fpA, " "), strings.Join(fpB, " ")
	r.ServedChanged, r.FingerprintChanged = changed(servedA, servedB), changed(fpA, fpB)
	if r.Answered > 0 {
		r.Agreement = ptr(float64(r.Agree) / float64(r.Answered))
		if pe, err := psychometrics.ChanceAgreement(ca, cb); err == nil {
			r.chance = pe
			if k, err := psychometrics.KappaOf(*r.Agreement, pe); err == nil {
				r.Kappa = ptr(k)
			}
		}
	}
	r.Scored, r.Personas = len(diffs), len(personas)
	if r.Scored == 0 {
		return
	}
	r.MeanA, r.MeanB, r.Shift = mean(sa), mean(sb), mean(diffs)
	if v, err := psychometrics.ICC21(x); err == nil {
		r.ICC = ptr(v)
	}
	if lo, hi, ok := bootstrap(cluster, opt, label, item); ok {
		r.ShiftLo, r.ShiftHi = &lo, &hi
	}
}

// distances sets r's W1 and JSD between A's and B's mean distributions over the matched cells with a
// distribution in both runs.
func (r *Row) distances(ps []pair) {
	var pa, pb []float64 // sums of the pmfs
	var first pair
	for _, p := range ps {
		if p.a.pmf == nil || p.b.pmf == nil {
			continue
		}
		if r.Distributions == 0 {
			first = p
		}
		r.Distributions++
		pa, pb = addTo(pa, p.a.pmf), addTo(pb, p.b.pmf)
	}
	if r.Distributions == 0 {
		return
	}
	ma, mb := scale(pa, r.Distributions), scale(pb, r.Distributions)
	if d, err := psychometrics.JensenShannon(ma, mb); err == nil {
		r.JSD = ptr(d)
	}
	// As reference.csv does: the mean distributions restricted to the scored options and renormalised, each run
	// by its own spec's scoring of the item.
	qa, qb := results.ScoredPMF(first.a.spec, first.a.it, ma), results.ScoredPMF(first.b.spec, first.b.it, mb)
	if qa != nil && qb != nil {
		if d, err := psychometrics.Wasserstein1(qa, qb); err == nil {
			r.W1 = ptr(d)
		}
	}
}

// bootstrap is the 95 % percentile interval of the mean difference over Samples resamples of the personas with
// replacement (each resample draws as many personas as there are, and its mean is over all the cells of the
// personas drawn), the generator a PCG seeded with (Seed, FNV-1a of the model pair's label NUL item). ok is false
// with no resamples (intervals off) and for fewer than two personas, whose resamples cannot vary by persona.
func bootstrap(cluster [][]float64, opt Options, model, item string) (lo, hi float64, ok bool) {
	if len(cluster) < 2 || opt.Samples <= 0 {
		return 0, 0, false
	}
	sums := make([]float64, len(cluster))
	for i, c := range cluster {
		for _, v := range c {
			sums[i] += v
		}
	}
	h := fnv.New64a()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(item))
	rng := rand.New(rand.NewPCG(uint64(opt.Seed), h.Sum64()))
	means := make([]float64, opt.Samples)
	for s := range means {
		var sum float64
		n := 0
		for range cluster {
			i := rng.IntN(len(cluster))
			sum += sums[i]
			n += len(cluster[i])
		}
		means[s] = sum / float64(n)
	}
	slices.Sort(means)
	return stat.Quantile(0.025, stat.Empirical, means, nil), stat.Quantile(0.975, stat.Empirical, means, nil), true
}

func addTo(sum, p []float64) []float64 {
	if sum == nil {
		sum = make([]float64, len(p))
	}
	for i, v := range p {
		sum[i] += v
	}
	return sum
}

func scale(sum []float64, n int) []float64 {
	out := make([]float64, len(sum))
	for i, v := range sum {
		out[i] = v / float64(n)
	}
	return out
}

// mean is the arithmetic mean of v, nil for none.
func mean(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return ptr(s / float64(len(v)))
}

func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func addDistinct(list []string, v string) []string {
	if v == "" || slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// changed is whether the distinct values a and b differ as sets, nil when either is empty (the provider said
// nothing: unknown).
func changed(a, b []string) *bool {
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	c := !sameSet(a, b)
	return &c
}
