package psychometrics

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// iccData is Shrout & Fleiss's (1979) table 2: six targets rated by four judges. Their ICC(2,1) is 0.29 (to two
// decimals, as they print it); psych::ICC gives 0.2897638 (its example of the same data).
var iccData = [][]float64{
	{9, 2, 5, 8},
	{6, 1, 3, 2},
	{8, 4, 6, 8},
	{7, 1, 2, 6},
	{10, 5, 6, 9},
	{6, 2, 4, 7},
}

func TestICC21ShroutFleiss(t *testing.T) {
	got, err := ICC21(iccData)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.2897638; math.Abs(got-want) > 5e-8 {
		t.Errorf("ICC(2,1) = %.10g, want %.7g (psych::ICC)", got, want)
	}
}

// TestICC21AgainstR checks two-rater matrices, the shape compare uses, against psych::ICC when R with psych is
// installed.
func TestICC21AgainstR(t *testing.T) {
	if _, err := exec.LookPath("Rscript"); err != nil {
		t.Skip("Rscript not installed")
	}
	cases := [][][]float64{
		iccData,
		{{1, 2}, {2, 2}, {3, 4}, {4, 3}, {5, 5}, {2, 1}},
		{{1.5, 2.25}, {2, 2.75}, {3.125, 4}, {4, 3.5}, {4.5, 5}},
	}
	for i, x := range cases {
		got, err := ICC21(x)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, r := range x {
			var v []string
			for _, f := range r {
				v = append(v, strconv.FormatFloat(f, 'g', -1, 64))
			}
			rows = append(rows, strings.Join(v, ","))
		}
		script := fmt.Sprintf(`suppressMessages(library(psych)); x <- matrix(c(%s), nrow=%d, byrow=TRUE); `+
			`r <- ICC(x, lmer=FALSE)$results; cat(sprintf("%%.17g", r$ICC[r$type == "ICC2"]))`, strings.Join(rows, ","), len(x))
		var out, errOut bytes.Buffer
		cmd := exec.Command("Rscript", "-e", script)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("Rscript: %v\n%s", err, errOut.String())
		}
		want, err := strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
		if err != nil {
			t.Fatalf("R printed %q", out.String())
		}
		t.Logf("case %d: ICC(2,1) %.17g, |Go − R| = %.3g", i, got, math.Abs(got-want))
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("case %d: ICC(2,1) = %.17g, psych::ICC %.17g", i, got, want)
		}
	}
}

func TestICC21Edges(t *testing.T) {
	if v, err := ICC21([][]float64{{1, 1}, {2, 2}, {5, 5}}); err != nil || v != 1 {
		t.Errorf("identical raters: %v, %v; want 1", v, err)
	}
	if _, err := ICC21([][]float64{{3, 3}, {3, 3}}); !errors.Is(err, ErrNoVariance) {
		t.Errorf("constant: %v, want ErrNoVariance", err)
	}
	if _, err := ICC21([][]float64{{3, 3}}); !errors.Is(err, ErrTooFew) {
		t.Errorf("one target: %v, want ErrTooFew", err)
	}
	if _, err := ICC21([][]float64{{3, 3}, {3}}); !errors.Is(err, ErrShape) {
		t.Errorf("ragged: %v, want ErrShape", err)
	}
}

func TestCohenKappa(t *testing.T) {
	// 10 targets: agreement 7/10; a's shares x .6 y .4, b's x .3 y .7; p_e = .18 + .28 = .46; κ = .24/.54 = 4/9.
	a := []string{"x", "x", "x", "x", "x", "x", "y", "y", "y", "y"}
	b := []string{"x", "x", "x", "y", "y", "y", "y", "y", "y", "y"}
	if v, err := CohenKappa(a, b); err != nil || math.Abs(v-4.0/9) > 1e-15 {
		t.Errorf("κ = %v, %v; want 4/9", v, err)
	}
	if v, err := CohenKappa(a, a); err != nil || v != 1 {
		t.Errorf("κ with itself = %v, %v; want 1", v, err)
	}
	if _, err := CohenKappa([]string{"x", "x"}, []string{"x", "x"}); !errors.Is(err, ErrNoVariance) {
		t.Errorf("one category: %v, want ErrNoVariance", err)
	}
}
