package psychometrics

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// groupCases reads testdata/bfi_groups.csv (make_groups.R): case → personas × items matrix, rows and columns
// in the order they first appear.
func groupCases(t *testing.T) (order []string, cases map[string][][]float64) {
	t.Helper()
	type idx struct{ rows, cols map[string]int }
	cases = map[string][][]float64{}
	pos := map[string]*idx{}
	for _, r := range readCSV(t, "bfi_groups.csv")[1:] {
		c, persona, item := r[0], r[1], r[2]
		p := pos[c]
		if p == nil {
			p = &idx{rows: map[string]int{}, cols: map[string]int{}}
			pos[c] = p
			order = append(order, c)
		}
		if _, ok := p.rows[persona]; !ok {
			p.rows[persona] = len(p.rows)
			cases[c] = append(cases[c], nil)
		}
		if _, ok := p.cols[item]; !ok {
			p.cols[item] = len(p.cols)
		}
		i, j := p.rows[persona], p.cols[item]
		for len(cases[c][i]) <= j {
			cases[c][i] = append(cases[c][i], Missing)
		}
		if r[3] != "" {
			v, err := strconv.ParseFloat(r[3], 64)
			if err != nil {
				t.Fatalf("bfi_groups.csv %v: %v", r, err)
			}
			cases[c][i][j] = v
		}
	}
	return order, cases
}

// TestOmegaWherePsychRefuses holds ComputeAlpha and OmegaTotal to R psych on examples/bfi's groups of personas
// (testdata/reference_groups.csv, make_groups.R), and ScaleReliability to them plus its own rule (both refused
// with fewer personas than items): alpha everywhere (psych computes it even for 2 personas);
// omega empty with ErrNoStart exactly where omega() stops, its SMCs summing to 0.001 or less (some of the age
// bands, whose 2 or 4 personas make a singular matrix, and more with missing answers); psych's omega to 1e-9 wherever it
// computes one, except where one of R's own pseudo-inverse diagonal entries is zero to rounding, which silico
// refuses with ErrSMCRounding because psych's number there follows the sign of a rounding error.
func TestOmegaWherePsychRefuses(t *testing.T) {
	ref := readReferenceFile(t, "reference_groups.csv")
	order, cases := groupCases(t)
	if len(order) != 70 {
		t.Fatalf("%d cases in bfi_groups.csv, want 35 scale × group matrices and their 35 with missing answers", len(order))
	}
	var noStart, noStartFull, rounding, computed, fewer int
	var w worst
	for _, name := range order {
		c, x := ref[name], cases[name]
		if c == nil {
			t.Fatalf("no reference for %s", name)
		}
		// psych's own steps first (ComputeAlpha, OmegaTotal), then the outputs' rule on top of them.
		a, err := ComputeAlpha(x)
		if err != nil || float64(len(a.Items)) != c.totals["n_items"] || !w.near(a.Raw, c.totals["raw_alpha"]) {
			t.Errorf("%s: alpha %.15g over %d items (err %v), psych %.15g over %v", name, a.Raw, len(a.Items), err,
				c.totals["raw_alpha"], c.totals["n_items"])
			continue
		}
		rel := Reliability{Alpha: a}
		rel.Omega, rel.OmegaErr = OmegaTotal(x, a.Items)
		if out := ScaleReliability(x); a.Respondents < len(a.Items) {
			if !errors.Is(out.Err, ErrFewerRespondents) || !math.IsNaN(out.Omega) || !strings.HasPrefix(out.Note(), "alpha and omega: fewer respondents than items") {
				t.Errorf("%s: %d personas for %d items: ScaleReliability gives alpha %v (%v), note %q; want both refused", name, a.Respondents, len(a.Items), out.Raw, out.Err, out.Note())
			}
			fewer++
		} else if out.Err != nil || out.Raw != a.Raw || !sameFloat(out.Omega, rel.Omega) {
			t.Errorf("%s: ScaleReliability %v, %v (%v), want ComputeAlpha's and OmegaTotal's", name, out.Raw, out.Omega, out.Err)
		}
		refused := c.totals["omega_refused"] == 1
		switch {
		case refused:
			if !errors.Is(rel.OmegaErr, ErrNoStart) || !math.IsNaN(rel.Omega) || c.totals["smc_sum"] > paMinErr {
				t.Errorf("%s: psych's omega() stops (its SMCs sum to %g); silico gives %v, %v", name, c.totals["smc_sum"], rel.Omega, rel.OmegaErr)
			}
			if !strings.HasPrefix(rel.Note(), "omega: the squared multiple correlations sum to") {
				t.Errorf("%s: note %q", name, rel.Note())
			}
			noStart++
			if !strings.HasSuffix(name, "/missing") {
				noStartFull++
			}
		case errors.Is(rel.OmegaErr, ErrSMCRounding):
			if d := c.totals["pinv_min_abs_diag"]; d > 1e-12 {
				t.Errorf("%s: refused as decided by rounding, but R's smallest |diag(Pinv)| is %g", name, d)
			}
			rounding++
		case rel.OmegaErr != nil:
			t.Errorf("%s: omega refused (%v), psych computes %.15g", name, rel.OmegaErr, c.totals["omega_total"])
		default:
			if !w.near(rel.Omega, c.totals["omega_total"]) {
				t.Errorf("%s: omega %.15g, psych %.15g (diff %.3g)", name, rel.Omega, c.totals["omega_total"], rel.Omega-c.totals["omega_total"])
			}
			computed++
		}
	}
	t.Logf("omega: %d computed (largest difference to psych %.3g), %d refused where psych stops (%d without missing answers), %d refused as decided by rounding",
		computed, w.d, noStart, noStartFull, rounding)
	t.Logf("%d matrices with fewer personas than items refused by ScaleReliability", fewer)
	if noStartFull == 0 || computed < 30 || fewer == 0 {
		t.Errorf("%d full matrices refused where psych stops and %d computed: the reference no longer tests both", noStartFull, computed)
	}
}

// TestOmegaRefusalLiveR runs R psych itself, when Rscript is installed, on one matrix where omega() stops and
// one where it computes, and checks OmegaTotal agrees: the committed reference values are not the only witness.
func TestOmegaRefusalLiveR(t *testing.T) {
	rscript, err := exec.LookPath("Rscript")
	if err != nil {
		t.Skip("Rscript not installed")
	}
	ref := readReferenceFile(t, "reference_groups.csv")
	order, cases := groupCases(t)
	// The first matrix without missing answers where the reference says omega() stops, and one where it computes.
	var stops string
	for _, name := range order {
		if ref[name].totals["omega_refused"] == 1 && !strings.HasSuffix(name, "/missing") {
			stops = name
			break
		}
	}
	if stops == "" {
		t.Fatal("reference_groups.csv has no full matrix where omega() stops")
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name    string
		refused bool
	}{{stops, true}, {"E/gender=1", false}} {
		name, x := c.name, cases[c.name]
		var b strings.Builder
		for _, row := range x {
			for j, v := range row {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
			}
			b.WriteByte('\n')
		}
		path := filepath.Join(dir, "x.csv")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		script := `suppressPackageStartupMessages({library(psych); library(GPArotation)})
x <- read.csv(commandArgs(TRUE)[1], header = FALSE)
om <- tryCatch(suppressWarnings(suppressMessages(omega(x, nfactors = 1, fm = "pa", plot = FALSE)))$omega.tot, error = function(e) NA)
cat(if (is.na(om)) "refused" else sprintf("%.17g", om))`
		out, err := exec.Command(rscript, "-e", script, path).Output()
		if err != nil {
			t.Skipf("Rscript with psych and GPArotation did not run: %v", err)
		}
		cols := make([]int, len(x[0]))
		for j := range cols {
			cols[j] = j
		}
		om, oerr := OmegaTotal(x, cols)
		got := strings.TrimSpace(string(out))
		if (got == "refused") != c.refused {
			t.Fatalf("%s: psych says %q; the case is chosen for refused = %v", name, got, c.refused)
		}
		if got == "refused" {
			if !errors.Is(oerr, ErrNoStart) {
				t.Errorf("%s: psych's omega() stops; OmegaTotal gives %v, %v", name, om, oerr)
			}
		} else if want, err := strconv.ParseFloat(got, 64); err != nil || oerr != nil || !near(om, want) {
			t.Errorf("%s: psych's omega %q; OmegaTotal %v, %v", name, got, om, oerr)
		}
	}
}

// sameFloat is == that also holds two NaNs equal.
func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// TestNoTotalVariance: where the items vary but their total does not (exactly, or to rounding), ComputeAlpha
// gives psych's number (±∞ or a quotient of rounding errors) and ScaleReliability refuses both α and ω with
// ErrNoTotalVariance; a strongly negative α whose total does vary stays a number.
func TestNoTotalVariance(t *testing.T) {
	cases := []struct {
		name   string
		x      [][]float64
		refuse bool
	}{
		{"exact", [][]float64{{1, 3, 2}, {2, 2, 2}, {3, 1, 2}, {1, 3, 2}}, true},
		// 0.1 + 0.3 is not 0.4 in float64: the total varies by rounding only.
		{"rounding", [][]float64{{0.1, 0.3}, {0.2, 0.2}, {0.3, 0.1}}, true},
		{"negative but real", [][]float64{{1, 3}, {2, 2}, {3, 1.5}}, false},
	}
	for _, c := range cases {
		a, err := ComputeAlpha(c.x)
		if err != nil {
			t.Fatalf("%s: ComputeAlpha: %v", c.name, err)
		}
		out := ScaleReliability(c.x)
		if !c.refuse {
			if out.Err != nil || out.Raw != a.Raw || a.Raw > -1 {
				t.Errorf("%s: ScaleReliability α %v (%v), want ComputeAlpha's %v, below −1", c.name, out.Raw, out.Err, a.Raw)
			}
			continue
		}
		if !math.IsInf(a.Raw, 0) && math.Abs(a.Raw) < 1e12 {
			t.Errorf("%s: ComputeAlpha %v: the case does not have a flat total", c.name, a.Raw)
		}
		if !errors.Is(out.Err, ErrNoTotalVariance) || !math.IsNaN(out.Omega) || out.Note() != "alpha and omega: the total score does not vary (its variance is zero to rounding)" {
			t.Errorf("%s: ScaleReliability α %v, ω %v (%v), note %q; want both refused", c.name, out.Raw, out.Omega, out.Err, out.Note())
		}
	}
}
