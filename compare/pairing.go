package compare

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/silicolab/silico/experiment"
)

// ErrUnpaired is returned when the two runs' models or seeds cannot be paired.
var ErrUnpaired = errors.New("compare: the runs cannot be paired")

// How a Pairing paired models or seeds.
const (
	// ByID pairs equal ids (the two specs list the same models, or the same seeds, in any order).
	ByID = "id"
	// ByPosition pairs A's i-th with B's i-th (the lists differ but are as long).
	ByPosition = "position"
	// ByHand pairs the models Options.Models names, and the others by id.
	ByHand = "named"
)

// ModelPair is a model of run A set beside a model of run B. A or B is "" for a model with no partner, whose
// cells are all only in its run.
type ModelPair struct{ A, B string }

// Label names the pair in compare.csv's order, the summary and the page: the model id when both sides agree
// (or one side has none), "a=b" otherwise.
func (p ModelPair) Label() string {
	switch {
	case p.A == "":
		return p.B
	case p.B == "" || p.A == p.B:
		return p.A
	}
	return p.A + "=" + p.B
}

// SeedPair is a seed of run A set beside a seed of run B.
type SeedPair struct{ A, B int64 }

// Pairing says which cells of B are set beside which cells of A: the cell of model Models[i].B, seed Seeds[j].B
// beside the cell of model Models[i].A, seed Seeds[j].A with the same item id and persona id.
type Pairing struct {
	Models   []ModelPair
	ModelsBy string
	Seeds    []SeedPair
	SeedsBy  string
}

// String is the pairing as the summary says it, e.g. "models by position (gpt=llama), seeds by position
// (1=11, 2=12)"; pairs of equal ids are not listed.
func (p Pairing) String() string {
	var ms []string
	for _, m := range p.Models {
		switch {
		case m.A == "":
			ms = append(ms, m.B+" only in B")
		case m.B == "":
			ms = append(ms, m.A+" only in A")
		case m.A != m.B:
			ms = append(ms, m.A+"="+m.B)
		}
	}
	out := "models by " + p.ModelsBy
	if p.ModelsBy == ByHand {
		out = "models as named"
	}
	if len(ms) > 0 {
		out += " (" + strings.Join(ms, ", ") + ")"
	}
	out += ", seeds by " + p.SeedsBy
	if p.SeedsBy != ByID {
		out += " (" + p.SeedPairs(", ") + ")"
	}
	return out
}

// SeedPairs is the seed pairs as "a=b" joined with sep, in A's seed order.
func (p Pairing) SeedPairs(sep string) string {
	parts := make([]string, len(p.Seeds))
	for i, s := range p.Seeds {
		parts[i] = strconv.FormatInt(s.A, 10) + "=" + strconv.FormatInt(s.B, 10)
	}
	return strings.Join(parts, sep)
}

// Pair pairs the models and seeds of spec a with those of spec b. Models: the pairs named (see PairModels), else
// by id when both specs list the same model ids, else by position when they list as many; else it fails.
// Seeds: by value when both list the same seeds, else by position when they list as many; else it fails.
func Pair(a, b *experiment.Spec, named []ModelPair) (Pairing, error) {
	var p Pairing
	ma, mb := modelIDs(a), modelIDs(b)
	var err error
	if p.Models, p.ModelsBy, err = PairModels(ma, mb, named); err != nil {
		return Pairing{}, err
	}
	switch {
	case sameSet(a.Seeds, b.Seeds):
		p.SeedsBy = ByID
		for _, s := range a.Seeds {
			p.Seeds = append(p.Seeds, SeedPair{s, s})
		}
	case len(a.Seeds) == len(b.Seeds):
		p.SeedsBy = ByPosition
		for i, s := range a.Seeds {
			p.Seeds = append(p.Seeds, SeedPair{s, b.Seeds[i]})
		}
	default:
		return Pairing{}, fmt.Errorf("%w: run A's spec has seeds %v and run B's %v: seeds that differ are paired "+
			"by position, which needs as many in both", ErrUnpaired, a.Seeds, b.Seeds)
	}
	return p, nil
}

// PairModels pairs model ids a with model ids b. With named pairs: those, and every other model with the model
// of its id in the other run where that one is not named; models left have no partner. Without: by id when a
// and b hold the same ids, else by position when they are as many; else it fails, asking for named pairs.
func PairModels(a, b []string, named []ModelPair) ([]ModelPair, string, error) {
	if len(named) == 0 {
		switch {
		case sameSet(a, b):
			out := make([]ModelPair, len(a))
			for i, m := range a {
				out[i] = ModelPair{m, m}
			}
			return out, ByID, nil
		case len(a) == len(b):
			out := make([]ModelPair, len(a))
			for i, m := range a {
				out[i] = ModelPair{m, b[i]}
			}
			return out, ByPosition, nil
		}
		return nil, "", fmt.Errorf("%w: run A's spec has models %v and run B's %v: models that differ are paired "+
			"by position, which needs as many in both; name the pairs instead (--models A_MODEL=B_MODEL,...)", ErrUnpaired, a, b)
	}
	partnerA, partnerB := map[string]string{}, map[string]string{}
	for _, p := range named {
		if !slices.Contains(a, p.A) {
			return nil, "", fmt.Errorf("%w: model pair %s=%s: run A has no model %q (it has %v)", ErrUnpaired, p.A, p.B, p.A, a)
		}
		if !slices.Contains(b, p.B) {
			return nil, "", fmt.Errorf("%w: model pair %s=%s: run B has no model %q (it has %v)", ErrUnpaired, p.A, p.B, p.B, b)
		}
		if _, dup := partnerA[p.A]; dup {
			return nil, "", fmt.Errorf("%w: model %q of run A is named in two pairs", ErrUnpaired, p.A)
		}
		if _, dup := partnerB[p.B]; dup {
			return nil, "", fmt.Errorf("%w: model %q of run B is named in two pairs", ErrUnpaired, p.B)
		}
		partnerA[p.A], partnerB[p.B] = p.B, p.A
	}
	var out []ModelPair
	for _, m := range a {
		pb, ok := partnerA[m]
		if !ok {
			if _, taken := partnerB[m]; slices.Contains(b, m) && !taken {
				pb = m
				partnerB[m] = m
			}
		}
		out = append(out, ModelPair{m, pb})
	}
	for _, m := range b {
		if _, ok := partnerB[m]; !ok {
			out = append(out, ModelPair{"", m})
		}
	}
	return out, ByHand, nil
}

// ParseModelPairs reads --models' value: comma-separated A_MODEL=B_MODEL pairs.
func ParseModelPairs(s string) ([]ModelPair, error) {
	var out []ModelPair
	for part := range strings.SplitSeq(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(part), "=")
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		if !ok || a == "" || b == "" {
			return nil, fmt.Errorf("model pair %q: want A_MODEL=B_MODEL (a model id of run A, one of run B), pairs separated by commas", part)
		}
		out = append(out, ModelPair{a, b})
	}
	return out, nil
}

func modelIDs(s *experiment.Spec) []string {
	out := make([]string, len(s.Models))
	for i, m := range s.Models {
		out[i] = m.ID
	}
	return out
}

// sameSet reports whether a and b hold the same values (each spec's lists have no duplicates).
func sameSet[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for _, v := range a {
		if !slices.Contains(b, v) {
			return false
		}
	}
	return true
}
