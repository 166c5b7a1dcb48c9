package results

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/bootstrap"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
)

// side builds a validitySide of units with scale 0's scores y, one attribute's levels and weights.
func side(y []float64, level []int, w []float64) *validitySide {
	return &validitySide{name: "humans", unit: "respondents", n: len(y), scale: [][]float64{y}, level: [][]int{level},
		weight: w}
}

// The weighted statistics on four units against R: summary(lm(y ~ f, weights = w))$r.squared, its f1
// coefficient, and sqrt(cov.wt(cbind(y), wt = w/sum(w))$cov), for y = 1, 2, 3, 5, f = 0, 0, 1, 1, w = 1, 1, 2, 2.
func TestValidityWeightedStatistics(t *testing.T) {
	v := side([]float64{1, 2, 3, 5}, []int{0, 0, 1, 1}, []float64{1, 1, 2, 2})
	levels := []string{"a", "b"}
	all := identity(4)
	for _, c := range []struct {
		name string
		f    sideStat
		want float64
	}{
		{"r2", r2Stat(0, 0, levels), 0.64935064935064946},
		{"difference", diffStat(0, 0, 1, levels), 2.5},
		{"sd", sdStat(func(v *validitySide) []float64 { return v.scale[0] }), 1.7209121016305458},
	} {
		got, n, why := c.f(v, all)
		if math.Abs(got-c.want) > 1e-12 || n != 4 || why != "" {
			t.Errorf("%s = %v over %d (%q), want %v over 4", c.name, got, n, why, c.want)
		}
	}
	// A unit drawn twice counts twice: resample {0, 0, 1, 2, 3} is y = 1, 1, 2, 3, 5 weighing 1, 1, 1, 2, 2.
	// R: summary(lm(y ~ f, weights = w))$r.squared with f = 0, 0, 0, 1, 1 is 0.72316384180790971.
	if got, _, _ := r2Stat(0, 0, levels)(v, []int{0, 0, 1, 2, 3}); math.Abs(got-0.72316384180790971) > 1e-12 {
		t.Errorf("r2 of a resample with a repeated unit = %v, want 0.72316384180790971", got)
	}
}

// The rules that need two units in a level count distinct units, not the slots of a resample: a level made of
// one unit drawn twice is fitted exactly (r2) or has a mean without a spread (difference), as a level of one
// unit does, and a sample of one unit drawn twice has an SD of 0 that says nothing.
func TestValidityCountsDistinctUnits(t *testing.T) {
	v := side([]float64{1, 2, 3, 5}, []int{0, 0, 1, 1}, nil)
	levels := []string{"a", "b"}
	sd := sdStat(func(v *validitySide) []float64 { return v.scale[0] })
	for _, c := range []struct {
		name string
		f    sideStat
		idx  []int
		why  string
	}{
		{"r2, level b one unit twice", r2Stat(0, 0, levels), []int{0, 1, 2, 2}, "two distinct respondents with a score in level b"},
		{"r2, level a one unit three times", r2Stat(0, 0, levels), []int{1, 1, 1, 2, 3}, "level a"},
		{"difference, level b one unit twice", diffStat(0, 0, 1, levels), []int{0, 1, 3, 3}, "two distinct respondents with a score in level b"},
		{"sd, one unit four times", sd, []int{2, 2, 2, 2}, "two distinct respondents"},
	} {
		got, n, why := c.f(v, c.idx)
		if !math.IsNaN(got) || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v over %d (%q), want NaN saying %q", c.name, got, n, why, c.why)
		}
	}
	// Two distinct units in each level, one of them drawn twice, still define every statistic.
	for name, f := range map[string]sideStat{"r2": r2Stat(0, 0, levels), "difference": diffStat(0, 0, 1, levels), "sd": sd} {
		if got, _, why := f(v, []int{0, 1, 1, 2, 3}); math.IsNaN(got) {
			t.Errorf("%s on a resample with two distinct units per level: NaN (%s)", name, why)
		}
	}
}

// An interval of validity.csv needs its statistic defined on at least half of the resamples: r2 and difference
// of gridSpecForValidity's attribute g need all four personas (two per level) in a resample of four, which
// 24 of 256 draws have (and the respondents likewise), so their intervals are refused with a note that says on
// how many resamples the statistic was defined; sd_ratio, defined on nearly every resample, keeps its.
func TestValidityRefusesThinIntervals(t *testing.T) {
	a := validityRun(t, gridSpecForValidity(t))
	samples, _ := a.Spec.Analysis.Bootstrap.Resolve()
	re := regexp.MustCompile(`model: no interval: defined on (\d+) of (\d+) resamples`)
	for _, stat := range []string{ValidityR2, ValidityDifference} {
		r := findValidity(t, a.Validity, "m1", "E", stat)
		if r.ModelValue == nil || r.HumanValue == nil {
			t.Fatalf("%s: no point value: %+v", stat, r)
		}
		if r.ModelLo != nil || r.ModelHi != nil || r.HumanLo != nil || r.HumanHi != nil {
			t.Errorf("%s: an interval from a minority of the resamples: %+v", stat, r)
		}
		m := re.FindStringSubmatch(r.Note)
		if m == nil || !strings.Contains(r.Note, "humans: no interval: defined on ") {
			t.Errorf("%s: note %q does not say on how many resamples each side's statistic was defined", stat, r.Note)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if m[2] != strconv.Itoa(samples) || float64(n) >= 0.5*float64(samples) || n < samples/20 {
			t.Errorf("%s: note %q: want about 9 %% of %d resamples", stat, r.Note, samples)
		}
	}
	sd := findValidity(t, a.Validity, "m1", "E", ValiditySDRatio)
	if sd.ModelLo == nil || sd.HumanLo == nil || strings.Contains(sd.Note, "no interval") {
		t.Errorf("sd_ratio lost its interval: %+v", sd)
	}
}

// Where a statistic cannot be computed it is NaN and says why: a level with one unit, no variance, no unit.
func TestValidityUndefined(t *testing.T) {
	levels := []string{"a", "b"}
	for _, c := range []struct {
		name string
		v    *validitySide
		f    sideStat
		why  string
	}{
		{"one unit in a level", side([]float64{1, 2, 3}, []int{0, 0, 1}, nil), r2Stat(0, 0, levels), "fewer than two distinct respondents with a score in level b"},
		{"difference, one unit", side([]float64{1, 2, 3}, []int{0, 1, 1}, nil), diffStat(0, 0, 1, levels), "level a"},
		{"no variance", side([]float64{2, 2, 2, 2}, []int{0, 0, 1, 1}, nil), r2Stat(0, 0, levels), "no variance"},
		{"sd of one", side([]float64{2, math.NaN()}, []int{0, 0}, nil), sdStat(func(v *validitySide) []float64 { return v.scale[0] }), "fewer than two"},
	} {
		got, _, why := c.f(c.v, identity(c.v.n))
		if !math.IsNaN(got) || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v, %q; want NaN saying %q", c.name, got, why, c.why)
		}
	}
}

// A respondent's pairs: two positive items answered (raw 5 agrees, 2 does not) and one negative (raw 6 agrees)
// give 2 pairs, 1 agreeing twice; a missing answer makes no pair; its acquiescence is ½(mean(5, 2) − 3.5 +
// 6 − 3.5) = 1.25.
func TestValidityKeyings(t *testing.T) {
	kk := keying{items: []int{0, 1, 2, 3}, pos: []int{0, 1, 3}, neg: []int{2}, mid: map[int]float64{0: 3.5, 1: 3.5, 2: 3.5, 3: 3.5}}
	raw := []float64{5, 2, 6, math.NaN()}
	if a, p := contradictionCounts(kk, func(it int) float64 { return raw[it] }); a != 1 || p != 2 {
		t.Errorf("agreeing pairs %v of %v, want 1 of 2", a, p)
	}
	v := &validitySide{n: 1, score: [][]float64{raw}, raw: [][]float64{raw}}
	v.fillScales([]keying{kk})
	if v.acq[0][0] != 1.25 {
		t.Errorf("acquiescence %v, want 1.25", v.acq[0][0])
	}
	if v.scale[0][0] != (5+2+6)/3.0 {
		t.Errorf("scale score %v, want the mean of the answered items", v.scale[0][0])
	}
}

// WriteValidityResamples writes the very resamples the intervals use: bootstrap.Indices of the validity keys.
func TestWriteValidityResamples(t *testing.T) {
	spec := gridSpecForValidity(t)
	var b bytes.Buffer
	if err := WriteValidityResamples(&b, spec); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	samples, seed := spec.Analysis.Bootstrap.Resolve()
	if len(recs) != 1+2*samples {
		t.Fatalf("%d lines, want a header and %d resamples of the personas and of the respondents", len(recs), samples)
	}
	want := slices.Concat(bootstrap.Indices(seed, ValidityResampleKey("personas"), len(spec.Personas), samples),
		bootstrap.Indices(seed, ValidityResampleKey("respondents"), spec.Reference.Respondents.Len(), samples))
	for i, r := range recs[1:] {
		var parts []string
		for _, x := range want[i] {
			parts = append(parts, strconv.Itoa(x))
		}
		label := map[bool]string{true: "personas", false: "respondents"}[i < samples]
		if r[0] != label || r[1] != strconv.Itoa(i%samples+1) || r[2] != strings.Join(parts, ";") {
			t.Fatalf("line %d: %v, want %s %d %v", i+1, r, label, i%samples+1, want[i])
		}
	}
}

// gridSpecForValidity is testSpec with four personas (attribute g: a, a, b, b) and a reference of four
// respondents of the same groups: answers by option index on q1, q2 (reversed) and q3.
func gridSpecForValidity(t *testing.T) *experiment.Spec {
	t.Helper()
	s := testSpec()
	s.Personas = nil
	for i, g := range []string{"a", "a", "b", "b"} {
		s.Personas = append(s.Personas, experiment.Persona{ID: "p" + strconv.Itoa(i+1), Attributes: map[string]string{"g": g}})
	}
	s.Reference = &experiment.Reference{Groups: []string{"g"}, Form: experiment.ReferenceAnswers,
		Respondents: &experiment.Respondents{Items: []string{"q1", "q2", "q3"},
			Answers: [][]int{{2, 2, 0}, {2, 0, 1}, {0, 0, -1}, {1, 2, 2}},
			Groups:  [][]string{{"a"}, {"a"}, {"b"}, {"b"}}}}
	return s
}

// validityRun analyzes gridSpecForValidity's cells, every one answered: q1 "3" (agree), q2 "3" for p1 and p2
// and "1" for p3 and p4, q3 "y".
func validityRun(t *testing.T, s *experiment.Spec) *Analysis {
	t.Helper()
	var recs []store.Record
	for m := range s.Models {
		for sd := range s.Seeds {
			for p := range s.Personas {
				for it, opt := range []string{"3", map[bool]string{true: "3", false: "1"}[p < 2], "y"} {
					recs = append(recs, ok(s.CellIndex(m, sd, it, p, 0), opt))
				}
			}
		}
	}
	a, err := Analyze(context.Background(), sliceSource{recs: recs}, s, "run", 0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func findValidity(t *testing.T, rows []Validity, model, scale, stat string) Validity {
	t.Helper()
	for _, r := range rows {
		if r.Model == model && r.Scale == scale && r.Statistic == stat && r.ItemID == "" {
			return r
		}
	}
	t.Fatalf("no %s line of %s/%s", stat, model, scale)
	return Validity{}
}

// The model's contradictions come from the written answers, pairs per persona and seed; the humans' from each
// respondent; a scale with one keying, and a side without respondents, are empty and say why.
func TestValidityOfARun(t *testing.T) {
	s := gridSpecForValidity(t)
	a := validityRun(t, s)
	c := findValidity(t, a.Validity, "m1", "E", ValidityContradiction)
	// Personas p1, p2 answer q1 and q2 on the agreeing side on both seeds; p3, p4 never: 4 of 8 pairs. Of the
	// respondents only the first agrees with both (q1 and q2 option 3): 1 of 4.
	if c.ModelValue == nil || *c.ModelValue != 0.5 || c.HumanValue == nil || *c.HumanValue != 0.25 || c.NModel != 4 || c.NHuman != 4 {
		t.Errorf("contradiction %+v, want model 0.5 over 4 personas, humans 0.25 over 4", c)
	}
	// Acquiescence: p1, p2 ½((3 − 2) + (3 − 2)) = 1, p3, p4 ½((3 − 2) + (1 − 2)) = 0.
	if q := findValidity(t, a.Validity, "m1", "E", ValidityAcquiescence); q.ModelValue == nil || *q.ModelValue != 0.5 {
		t.Errorf("acquiescence %+v, want model 0.5", q)
	}
	if q := findValidity(t, a.Validity, "m2", "A", ValidityAcquiescence); q.ModelValue != nil || !strings.Contains(q.Note, "no reverse-keyed items") {
		t.Errorf("acquiescence of a scale keyed one way: %+v", q)
	}
	d := findValidity(t, a.Validity, "m1", "E", ValidityDifference)
	// Scale E scores (q2 reversed): p1, p2 (3 + 1)/2 = 2, p3, p4 (3 + 3)/2 = 3.
	if d.Level != "b" || d.Baseline != "a" || d.ModelValue == nil || *d.ModelValue != 1 || d.Agree == nil {
		t.Errorf("difference %+v: want level b against a, model 3 − 2 = 1", d)
	}
	// Respondents' E scores: 2, 3 (level a) and 2, 1.5 (level b): −0.75, the other sign.
	if d.HumanValue == nil || *d.HumanValue != -0.75 || d.Agree == nil || *d.Agree {
		t.Errorf("difference %+v: want humans −0.75, signs disagreeing", d)
	}
	// (Its intervals are refused, TestValidityRefusesThinIntervals: two personas per level of four.)
	if q := findValidity(t, a.Validity, "m1", "E", ValiditySDRatio); q.ModelLo == nil || q.HumanLo == nil || q.ValueLo == nil {
		t.Errorf("sd_ratio %+v: no intervals with the default bootstrap", q)
	}

	again := validityRun(t, s)
	if !reflect.DeepEqual(a.Validity, again.Validity) {
		t.Error("two analyses of the same run differ")
	}
	// The resampled statistics are shared out among GOMAXPROCS workers: one worker gives the same lines.
	prev := runtime.GOMAXPROCS(1)
	one := validityRun(t, s)
	runtime.GOMAXPROCS(prev)
	if prev > 1 && !reflect.DeepEqual(a.Validity, one.Validity) {
		t.Errorf("one worker and %d give different lines", prev)
	}
	seed := int64(99)
	s.Analysis.Bootstrap.Seed = &seed
	other := validityRun(t, s)
	moved := 0
	for i, r := range other.Validity {
		if !reflect.DeepEqual(r.ModelValue, a.Validity[i].ModelValue) || !reflect.DeepEqual(r.Value, a.Validity[i].Value) {
			t.Errorf("line %d: the bootstrap seed moved a point value", i)
		}
		if !reflect.DeepEqual(r.ModelLo, a.Validity[i].ModelLo) || !reflect.DeepEqual(r.HumanHi, a.Validity[i].HumanHi) {
			moved++
		}
	}
	if moved == 0 {
		t.Error("another bootstrap seed moved no interval")
	}
	zero := 0
	s.Analysis.Bootstrap.Samples = &zero
	for _, r := range validityRun(t, s).Validity {
		if r.ModelLo != nil || r.HumanLo != nil || r.ValueLo != nil {
			t.Fatalf("an interval with samples 0: %+v", r)
		}
	}
	s.Reference.Respondents = nil
	s.Reference.Form = experiment.ReferenceCountsForm
	for _, r := range validityRun(t, s).Validity {
		if r.HumanValue != nil || r.Value != nil || (r.Statistic != ValidityAcquiescence && r.Statistic != ValidityContradiction || r.Scale == "E") && !strings.Contains(r.Note, "file of counts") {
			t.Fatalf("a line without respondents: %+v", r)
		}
	}
}
