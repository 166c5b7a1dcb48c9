package experiment

// The bootstrap a spec that sets none uses: its one home.
const (
	// DefaultBootstrapSamples is the number of resamples of every bootstrap interval of the outputs.
	DefaultBootstrapSamples = 1000
	// DefaultBootstrapSeed seeds them.
	DefaultBootstrapSeed = 1
	// MaxBootstrapSamples bounds analysis.bootstrap.samples: an export redoes every statistic that many times
	// per group, and past this the intervals move less than the digits anyone reads.
	MaxBootstrapSamples = 100000
)

// AnalysisSettings say how the outputs' statistics are computed; they change no call and no cell.
type AnalysisSettings struct {
	// Bootstrap configures every bootstrap interval of the outputs.
	Bootstrap BootstrapSettings `json:"bootstrap,omitzero"`
}

// BootstrapSettings are the resamples of bootstrap intervals. Nil fields take the defaults; they are pointers
// so that samples: 0 (no intervals) and seed: 0 can be told from unset. Resolve gives the numbers to use.
type BootstrapSettings struct {
	// Samples is the number of resamples; 0 turns the intervals off. Nil: DefaultBootstrapSamples.
	Samples *int `json:"samples,omitempty"`
	// Seed seeds the resamples. Nil: DefaultBootstrapSeed.
	Seed *int64 `json:"seed,omitempty"`
}

// Resolve returns the number of resamples and the seed, defaults filled in. The defaults are applied here and
// not by ApplyDefaults, so a spec that sets no analysis keeps the JSON form (and hash) it had before the key
// existed.
func (b BootstrapSettings) Resolve() (samples int, seed int64) {
	samples, seed = DefaultBootstrapSamples, DefaultBootstrapSeed
	if b.Samples != nil {
		samples = *b.Samples
	}
	if b.Seed != nil {
		seed = *b.Seed
	}
	return samples, seed
}

func (s *Spec) checkAnalysis(errs *Errors) {
	if n := s.Analysis.Bootstrap.Samples; n != nil && (*n < 0 || *n > MaxBootstrapSamples) {
		errs.add("analysis.bootstrap.samples", "%d is out of range; want a number of resamples from 0 (no intervals) to %d (unset: %d)",
			*n, MaxBootstrapSamples, DefaultBootstrapSamples)
	}
}
