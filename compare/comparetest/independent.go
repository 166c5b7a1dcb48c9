// Package comparetest recomputes compare.csv from two results.csv files with code independent of package
// compare, for tests of compare and of the command that runs it.
package comparetest

import (
	"encoding/csv"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// csvCell is what the independent computation reads of a results.csv row.
type csvCell struct {
	model, seed, item, persona, option string
	// variant, promptVariant, probe and order are the rest of the cell's identity: the wording and prompt ids
	// ("" for the spec's own), "verbalized" for a verbalized probe, and the order its options were shown in.
	variant, promptVariant, probe, order string
	served, fingerprint                  string
	answered                             bool
	pmf                                  []float64
	score                                *float64
}

// identity is the cell's identity with its model and seed replaced by model and seed.
func (c csvCell) identity(model, seed string) string {
	return strings.Join([]string{model, seed, c.item, c.variant, c.promptVariant, c.persona, c.probe, c.order}, "\x00")
}

// factors are the identity factors beyond model, seed, item and persona on which c differs from a cell asked as
// written.
func (c csvCell) factors() map[string]bool {
	return map[string]bool{"variant": c.variant != "", "prompt_variant": c.promptVariant != "", "probe": c.probe != "",
		"order": c.order != "as_written"}
}

// readRun reads a results.csv: the recorded cells (NotRun rows are cells without a record) by cell id, the
// cell ids in order. The options are the p_ columns' (every item of the spec has the same options, all scored).
func readRun(t testing.TB, path string) (map[string]csvCell, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	var options []string
	for i, h := range rows[0] {
		col[h] = i
		if o, ok := strings.CutPrefix(h, "p_"); ok {
			options = append(options, o)
		}
	}
	original := func(v string) string {
		if v == "original" {
			return ""
		}
		return v
	}
	out := map[string]csvCell{}
	var order []string
	for _, r := range rows[1:] {
		if r[col["error_class"]] == "NotRun" {
			continue
		}
		c := csvCell{model: r[col["model"]], seed: r[col["seed"]], item: r[col["item_id"]], persona: r[col["persona_id"]],
			variant: original(r[col["variant"]]), promptVariant: original(r[col["prompt_variant"]]), order: r[col["order"]],
			served: r[col["served_model"]], fingerprint: r[col["system_fingerprint"]]}
		if strings.Contains(r[col["cell_id"]]+"/", "/verbalized/") {
			c.probe = "verbalized"
		}
		if r[col["status"]] == "ok" {
			c.option, c.answered = r[col["option_id"]], true
		}
		var p []float64
		for _, o := range options {
			if v := r[col["p_"+o]]; v != "" {
				f, _ := strconv.ParseFloat(v, 64)
				p = append(p, f)
			}
		}
		score := func(name string) *float64 {
			if v := r[col[name]]; v != "" {
				f, _ := strconv.ParseFloat(v, 64)
				return &f
			}
			return nil
		}
		switch {
		case len(p) == len(options):
			var s float64
			for _, v := range p {
				s += v
			}
			for k := range p {
				p[k] /= s
			}
			c.pmf, c.score = p, score("expected_score")
		case c.answered:
			c.pmf = make([]float64, len(options))
			c.pmf[slices.Index(options, c.option)] = 1
			c.score = score("score")
		}
		out[r[col["cell_id"]]] = c
		order = append(order, r[col["cell_id"]])
	}
	return out, order
}

// Independent computes compare.csv's rows, each a map of column name to value, from two results.csv files, as
// docs/architecture.md defines them, with code of its own: a cell of A meets the cell of B with the same item,
// wording, prompt, persona, probe and shown order (results.csv's columns) whose model and seed are the partners
// of A's in models and seeds (A's value to B's; a value not in them is kept). Samples and seed are the
// bootstrap's. Every item must have the same options, all scored, every item of A's run a cell of each model,
// and every model of A a partner; the runs must record probabilities (results.csv's p_ columns).
func Independent(t testing.TB, pathA, pathB string, samples int, seed int64, models, seeds map[string]string) []map[string]string {
	t.Helper()
	a, orderA := readRun(t, pathA)
	cellsB, _ := readRun(t, pathB)
	b := map[string]csvCell{} // by identity
	for _, c := range cellsB {
		b[c.identity(c.model, c.seed)] = c
	}
	partner := func(m map[string]string, v string) string {
		if p, ok := m[v]; ok {
			return p
		}
		return v
	}
	var modelOrder, itemOrder, seedPairs []string
	for _, id := range orderA {
		c := a[id]
		if !slices.Contains(modelOrder, c.model) {
			modelOrder = append(modelOrder, c.model)
		}
		if !slices.Contains(itemOrder, c.item) {
			itemOrder = append(itemOrder, c.item)
		}
		if sp := c.seed + "=" + partner(seeds, c.seed); !slices.Contains(seedPairs, sp) {
			seedPairs = append(seedPairs, sp)
		}
	}
	type group struct {
		pairs        [][2]csvCell
		onlyA, onlyB int
		factors      []map[string]bool
	}
	groups := map[[2]string]*group{}
	get := func(m, it string) *group {
		if groups[[2]string{m, it}] == nil {
			groups[[2]string{m, it}] = &group{}
		}
		return groups[[2]string{m, it}]
	}
	hit := map[string]bool{}
	for _, id := range orderA {
		ca := a[id]
		g := get(ca.model, ca.item)
		g.factors = append(g.factors, ca.factors())
		idB := ca.identity(partner(models, ca.model), partner(seeds, ca.seed))
		if cb, ok := b[idB]; ok {
			g.pairs = append(g.pairs, [2]csvCell{ca, cb})
			hit[idB] = true
		} else {
			g.onlyA++
		}
	}
	toA := map[string]string{}
	for ma, mb := range models {
		toA[mb] = ma
	}
	for id, cb := range b {
		g := get(partner(toA, cb.model), cb.item)
		g.factors = append(g.factors, cb.factors())
		if !hit[id] {
			g.onlyB++
		}
	}
	matchedOn := func(fs []map[string]bool) string {
		out := []string{"model", "seed", "item", "persona"}
		for _, f := range []string{"variant", "prompt_variant", "probe", "order"} {
			if slices.ContainsFunc(fs, func(m map[string]bool) bool { return m[f] }) {
				out = append(out, f)
			}
		}
		return strings.Join(out, " ")
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var out []map[string]string
	for _, m := range modelOrder {
		mb := partner(models, m)
		label := m
		if mb != m {
			label = m + "=" + mb
		}
		var all [][2]csvCell
		allRow := map[string]string{"model": m, "model_b": mb, "item": "all", "scope": "model"}
		var w1s, jsds []float64
		var allFactors []map[string]bool
		onlyA, onlyB, dists := 0, 0, 0
		for _, item := range itemOrder {
			g := groups[[2]string{m, item}]
			if g == nil {
				t.Fatalf("no cells of %s/%s", m, item)
			}
			row := figures(g.pairs, samples, seed, label, item)
			row["model"], row["model_b"], row["item"], row["scope"] = m, mb, item, "item"
			row["only_a"], row["only_b"] = strconv.Itoa(g.onlyA), strconv.Itoa(g.onlyB)
			row["matched_on"] = matchedOn(g.factors)
			allFactors = append(allFactors, g.factors...)
			// Distances between the mean pmfs over the cells with one in both runs.
			var pa, pb []float64
			n := 0
			for _, p := range g.pairs {
				if p[0].pmf == nil || p[1].pmf == nil {
					continue
				}
				if n == 0 {
					pa, pb = make([]float64, len(p[0].pmf)), make([]float64, len(p[0].pmf))
				}
				n++
				for k := range pa {
					pa[k] += p[0].pmf[k]
					pb[k] += p[1].pmf[k]
				}
			}
			row["distributions"], row["items"] = strconv.Itoa(n), "0"
			if n > 0 {
				var w1, jsd, ca, cb float64
				for k := range pa {
					pa[k] /= float64(n)
					pb[k] /= float64(n)
				}
				for k := range len(pa) - 1 {
					ca += pa[k]
					cb += pb[k]
					w1 += math.Abs(ca - cb)
				}
				for k := range pa {
					mk := (pa[k] + pb[k]) / 2
					if pa[k] > 0 {
						jsd += pa[k] * math.Log2(pa[k]/mk) / 2
					}
					if pb[k] > 0 {
						jsd += pb[k] * math.Log2(pb[k]/mk) / 2
					}
				}
				row["w1"], row["jsd"] = f(w1), f(jsd)
				w1s, jsds = append(w1s, w1), append(jsds, jsd)
			}
			out = append(out, row)
			all = append(all, g.pairs...)
			onlyA, onlyB, dists = onlyA+g.onlyA, onlyB+g.onlyB, dists+n
		}
		for k, v := range figures(all, samples, seed, label, "all") {
			allRow[k] = v
		}
		allRow["only_a"], allRow["only_b"], allRow["distributions"] = strconv.Itoa(onlyA), strconv.Itoa(onlyB), strconv.Itoa(dists)
		allRow["items"] = strconv.Itoa(len(w1s))
		allRow["matched_on"] = matchedOn(allFactors)
		var sw, sj float64
		for i := range w1s {
			sw += w1s[i]
			sj += jsds[i]
		}
		allRow["w1"], allRow["jsd"] = f(sw/float64(len(w1s))), f(sj/float64(len(jsds)))
		out = append(out, allRow)
	}
	for _, r := range out {
		r["seeds"] = strings.Join(seedPairs, " ")
	}
	return out
}

// figures are the counts, score statistics and agreement of a set of matched cells, κ's chance
// agreement taken within each item, weighted by its answered cells (as for a model's row).
func figures(pairs [][2]csvCell, samples int, seed int64, model, item string) map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	row := map[string]string{"matched": strconv.Itoa(len(pairs))}
	// Agreement and κ.
	answered, agree := 0, 0
	na, nb := map[string]float64{}, map[string]float64{} // answers per item/option
	perItem := map[string]float64{}
	for _, p := range pairs {
		if !p[0].answered || !p[1].answered {
			continue
		}
		answered++
		if p[0].option == p[1].option {
			agree++
		}
		na[p[0].item+"/"+p[0].option]++
		nb[p[1].item+"/"+p[1].option]++
		perItem[p[0].item]++
	}
	row["answered"], row["agree"] = strconv.Itoa(answered), strconv.Itoa(agree)
	if answered > 0 {
		n := float64(answered)
		po := float64(agree) / n
		// Within an item: p_e,i = Σ_k (a_ik/n_i)(b_ik/n_i); pooled: Σ_i n_i p_e,i / n.
		var pe float64
		for k, v := range na {
			ni := perItem[strings.SplitN(k, "/", 2)[0]]
			pe += ni * (v / ni) * (nb[k] / ni)
		}
		pe /= n
		row["agreement"] = f(po)
		if pe < 1 {
			row["kappa"] = f((po - pe) / (1 - pe))
		}
	}
	// Scores: shift, means, ICC(2,1) from its two-way ANOVA, bootstrap over personas.
	var xa, xb []float64
	var personas []string
	byPersona := map[string][]float64{}
	for _, p := range pairs {
		if p[0].score == nil || p[1].score == nil {
			continue
		}
		xa, xb = append(xa, *p[0].score), append(xb, *p[1].score)
		if _, ok := byPersona[p[0].persona]; !ok {
			personas = append(personas, p[0].persona)
		}
		byPersona[p[0].persona] = append(byPersona[p[0].persona], *p[1].score-*p[0].score)
	}
	n := float64(len(xa))
	row["scored"], row["personas"] = strconv.Itoa(len(xa)), strconv.Itoa(len(personas))
	var ma, mb, md float64
	for i := range xa {
		ma += xa[i] / n
		mb += xb[i] / n
	}
	for i := range xa {
		md += xb[i] - xa[i]
	}
	md /= n
	row["mean_a"], row["mean_b"], row["shift"] = f(ma), f(mb), f(md)
	g := (ma + mb) / 2
	var ssr, sse float64
	for i := range xa {
		ri := (xa[i] + xb[i]) / 2
		ssr += 2 * (ri - g) * (ri - g)
		sse += (xa[i]-ri-ma+g)*(xa[i]-ri-ma+g) + (xb[i]-ri-mb+g)*(xb[i]-ri-mb+g)
	}
	msr, msc, mse := ssr/(n-1), n*((ma-g)*(ma-g)+(mb-g)*(mb-g)), sse/(n-1)
	row["icc"] = f((msr - mse) / (msr + mse + 2*(msc-mse)/n))
	h := fnv.New64a()
	h.Write([]byte(model + "\x00" + item))
	rng := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	means := make([]float64, samples)
	for s := range means {
		var sum float64
		cells := 0
		for range personas {
			d := byPersona[personas[rng.IntN(len(personas))]]
			for _, v := range d {
				sum += v
			}
			cells += len(d)
		}
		means[s] = sum / float64(cells)
	}
	slices.Sort(means)
	if b := float64(samples); samples > 0 && len(personas) > 1 {
		row["shift_lo"], row["shift_hi"] = f(means[int(math.Ceil(0.025*b))-1]), f(means[int(math.Ceil(0.975*b))-1])
	}
	// Provenance: distinct values in order of first appearance; changed when both runs name some and the sets differ.
	var sets [4][]string
	for _, p := range pairs {
		for k, v := range []string{p[0].served, p[1].served, p[0].fingerprint, p[1].fingerprint} {
			if v != "" && !slices.Contains(sets[k], v) {
				sets[k] = append(sets[k], v)
			}
		}
	}
	changed := func(x, y []string) string {
		if len(x) == 0 || len(y) == 0 {
			return ""
		}
		a, b := slices.Clone(x), slices.Clone(y)
		slices.Sort(a)
		slices.Sort(b)
		return strconv.FormatBool(!slices.Equal(a, b))
	}
	row["served_model_a"], row["served_model_b"] = strings.Join(sets[0], " "), strings.Join(sets[1], " ")
	row["system_fingerprint_a"], row["system_fingerprint_b"] = strings.Join(sets[2], " "), strings.Join(sets[3], " ")
	row["served_changed"], row["fingerprint_changed"] = changed(sets[0], sets[1]), changed(sets[2], sets[3])
	return row
}
