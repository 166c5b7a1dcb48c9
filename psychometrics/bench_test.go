package psychometrics

import (
	"testing"

	"github.com/silicolab/silico/bootstrap"
)

// BenchmarkBootstrapReliability times what a 95 % interval of α and ω costs on psych's bfi Agreeableness
// items (2,800 respondents × 5 items, pairwise missing answers): 1000 resamples of the respondents, each with
// ScaleReliability on the drawn rows. One op is the whole 1000.
func BenchmarkBootstrapReliability(b *testing.B) {
	_, x := matrix(b, "bfi_A.csv")
	const samples = 1000
	rows := make([][]float64, len(x))
	for b.Loop() {
		rs := bootstrap.New(1, "bench", len(x))
		idx := make([]int, len(x))
		for range samples {
			rs.Fill(idx)
			for i, r := range idx {
				rows[i] = x[r]
			}
			if r := ScaleReliability(rows); r.OmegaErr != nil {
				b.Fatal(r.OmegaErr)
			}
		}
	}
}
