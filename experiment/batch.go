package experiment

import (
	"fmt"
	"math"
	"time"

	"github.com/silicolab/silico/suggest"
)

// BatchMode says whether a model's cells are sent one call at a time or through the provider's batch API, which
// answers within a day at half the price.
type BatchMode string

// Batch modes. The empty mode is BatchSync.
const (
	BatchSync  BatchMode = "sync"
	BatchBatch BatchMode = "batch"
)

// OnExpired says what becomes of the requests a provider batch did not run before it expired or was cancelled
// by the provider.
type OnExpired string

// On-expired policies. The empty policy is OnExpiredResubmit.
const (
	// OnExpiredResubmit submits them in a new batch, until run.max_attempts submissions.
	OnExpiredResubmit OnExpired = "resubmit"
	// OnExpiredSync sends them as synchronous calls, at the full price.
	OnExpiredSync OnExpired = "sync"
	// OnExpiredFail records them failed.
	OnExpiredFail OnExpired = "fail"
)

var (
	batchModes = []string{string(BatchSync), string(BatchBatch)}
	onExpireds = []string{string(OnExpiredResubmit), string(OnExpiredSync), string(OnExpiredFail)}
)

// BatchSettings say how a model's cells go out: a model's own batch section, else run.batch. Zero values mean
// the defaults noted, resolved by Spec.BatchSettings.
type BatchSettings struct {
	// Mode is sync (default) or batch.
	Mode BatchMode `json:"mode,omitempty"`
	// MaxRequests is the most requests in one provider batch (default: the provider's limit, 50,000 for the
	// OpenAI format, 100,000 for Anthropic's; 50,000 for Gemini's, which documents none).
	MaxRequests int `json:"max_requests,omitempty"`
	// MaxBytes is the most bytes of one batch's input (default: the provider's limit, 200 MB for the OpenAI
	// format, 256 MB for Anthropic's; 200 MB for Gemini's, whose files may hold 2 GB).
	MaxBytes int `json:"max_bytes,omitempty"`
	// PollEvery is how often a batch's status is asked for (default 1m); while nothing changes the interval grows
	// to MaxPollEvery.
	PollEvery Duration `json:"poll_every,omitempty"`
	// OnExpired is resubmit (default), sync or fail.
	OnExpired OnExpired `json:"on_expired,omitempty"`
	// KeepFiles keeps what a collected batch leaves at its provider (the input, output and error files of an
	// OpenAI batch, an ended Anthropic batch with its results), which is otherwise deleted once its results are
	// recorded. Set on run.batch or on the model, it keeps them (a model cannot unset run.batch's). Optional:
	// false deletes them.
	KeepFiles bool `json:"keep_files,omitempty"`
}

// Defaults and bounds of BatchSettings. The request and byte limits are the providers' own.
const (
	DefaultPollEvery          = time.Minute
	MaxPollEvery              = 10 * time.Minute
	minPollEvery              = time.Second
	BatchMaxRequestsOpenAI    = 50_000
	BatchMaxBytesOpenAI       = 200 << 20
	BatchMaxRequestsAnthropic = 100_000
	BatchMaxBytesAnthropic    = 256 << 20
	// Gemini documents no bound on a batch's requests and input files of up to 2 GB: its defaults are the
	// OpenAI format's, which keep a chunk's input (held in a worker's memory while it is submitted) of one size.
	BatchMaxRequestsGemini = BatchMaxRequestsOpenAI
	BatchMaxBytesGemini    = BatchMaxBytesOpenAI
	// DefaultBatchDiscount is the share of the synchronous price a batch call costs at the providers that offer
	// batches (OpenAI, Anthropic, Gemini: 50%).
	DefaultBatchDiscount = 0.5
)

// batchLimits are the provider's limits of one batch.
func batchLimits(provider string) (requests, bytes int) {
	switch provider {
	case ProviderAnthropic:
		return BatchMaxRequestsAnthropic, BatchMaxBytesAnthropic
	case ProviderGemini:
		return BatchMaxRequestsGemini, BatchMaxBytesGemini
	}
	return BatchMaxRequestsOpenAI, BatchMaxBytesOpenAI
}

// BatchSettings are model m's resolved batch settings: each field of m.Batch that is set, else run.batch's, else
// the default (sync, the provider's limits, 1m, resubmit); keep_files is set when either sets it.
func (s *Spec) BatchSettings(m Model) BatchSettings {
	var out BatchSettings
	for _, b := range []*BatchSettings{s.Run.Batch, m.Batch} {
		if b == nil {
			continue
		}
		if b.Mode != "" {
			out.Mode = b.Mode
		}
		if b.MaxRequests != 0 {
			out.MaxRequests = b.MaxRequests
		}
		if b.MaxBytes != 0 {
			out.MaxBytes = b.MaxBytes
		}
		if b.PollEvery != 0 {
			out.PollEvery = b.PollEvery
		}
		if b.OnExpired != "" {
			out.OnExpired = b.OnExpired
		}
		out.KeepFiles = out.KeepFiles || b.KeepFiles
	}
	reqs, bytes := batchLimits(m.Provider)
	if out.Mode == "" {
		out.Mode = BatchSync
	}
	if out.MaxRequests == 0 {
		out.MaxRequests = reqs
	}
	if out.MaxBytes == 0 {
		out.MaxBytes = bytes
	}
	if out.PollEvery == 0 {
		out.PollEvery = Duration(DefaultPollEvery)
	}
	if out.OnExpired == "" {
		out.OnExpired = OnExpiredResubmit
	}
	return out
}

// Batched reports whether model m runs in batch mode.
func (s *Spec) Batched(m Model) bool { return s.BatchSettings(m).Mode == BatchBatch }

// checkBatch checks a batch section at path for a model of provider (or, for run.batch, every model's).
func checkBatch(errs *Errors, path string, b *BatchSettings, provider string) {
	if b == nil {
		return
	}
	if b.Mode != "" && !contains(batchModes, string(b.Mode)) {
		errs.add(path+".mode", "unknown mode %q%s; want %s", b.Mode, suggest.DidYouMean(string(b.Mode), batchModes), oneOf(batchModes))
	}
	reqs, bytes := batchLimits(provider)
	if b.MaxRequests < 0 || b.MaxRequests > reqs {
		errs.add(path+".max_requests", "%d is out of range; want requests per batch from 1 to %d, the provider's limit (0: %d)", b.MaxRequests, reqs, reqs)
	}
	if b.MaxBytes < 0 || b.MaxBytes > bytes {
		errs.add(path+".max_bytes", "%d is out of range; want bytes per batch input from 1 to %d, the provider's limit (0: %d)", b.MaxBytes, bytes, bytes)
	}
	if d := time.Duration(b.PollEvery); d < 0 || (d > 0 && d < minPollEvery) || d > 24*time.Hour {
		errs.add(path+".poll_every", "%v is out of range; want a duration from %v to 24h (0: default %v)", d, minPollEvery, DefaultPollEvery)
	}
	if b.OnExpired != "" && !contains(onExpireds, string(b.OnExpired)) {
		errs.add(path+".on_expired", "unknown policy %q%s; want %s", b.OnExpired, suggest.DidYouMean(string(b.OnExpired), onExpireds), oneOf(onExpireds))
	}
}

// checkBatches checks run.batch, every model's batch section, their batch prices, and what batch mode cannot do.
func (s *Spec) checkBatches(errs *Errors) {
	checkBatch(errs, "run.batch", s.Run.Batch, ProviderOpenAI)
	for i, m := range s.Models {
		p := fmt.Sprintf("models[%d]", i)
		checkBatch(errs, p+".batch", m.Batch, m.Provider)
		if pr := m.Price; pr != nil {
			if d := pr.BatchDiscount; d != nil && (*d <= 0 || *d > 1 || math.IsNaN(*d)) {
				errs.add(p+".price.batch_discount", "%v is out of range; want the share of the price a batch call costs, above 0 and at most 1 (default %v)", *d, DefaultBatchDiscount)
			}
			for name, v := range map[string]*float64{"batch_input_per_mtok": pr.BatchInputPerMTok, "batch_output_per_mtok": pr.BatchOutputPerMTok} {
				if v != nil && (*v < 0 || math.IsNaN(*v)) {
					errs.add(p+".price."+name, "%v is negative; want US dollars per million tokens ≥ 0", *v)
				}
			}
		}
		if s.Run.Cumulative && s.Batched(m) {
			path := p + ".batch.mode"
			if m.Batch == nil || m.Batch.Mode == "" {
				path = "run.batch.mode"
			}
			errs.add(path, "batch mode cannot run a cumulative spec: each item's prompts carry the answers to the items before; use mode: sync or cumulative: false")
		}
	}
}

// BatchPrice is the price of a batch call given the synchronous price base: price.batch_input_per_mtok and
// price.batch_output_per_mtok where set, else base × price.batch_discount (default DefaultBatchDiscount).
func BatchPrice(base Price, spec *Price) Price {
	discount := DefaultBatchDiscount
	out := Price{}
	var in, outTok *float64
	if spec != nil {
		if spec.BatchDiscount != nil {
			discount = *spec.BatchDiscount
		}
		in, outTok = spec.BatchInputPerMTok, spec.BatchOutputPerMTok
	}
	out.InputPerMTok = base.InputPerMTok * discount
	out.OutputPerMTok = base.OutputPerMTok * discount
	if in != nil {
		out.InputPerMTok = *in
	}
	if outTok != nil {
		out.OutputPerMTok = *outTok
	}
	return out
}

// HasBatchPrice reports whether p sets any batch price.
func (p *Price) HasBatchPrice() bool {
	return p != nil && (p.BatchDiscount != nil || p.BatchInputPerMTok != nil || p.BatchOutputPerMTok != nil)
}
