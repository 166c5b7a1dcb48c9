package specfile

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
)

const batchSpec = `name: batch
models:
  - id: gpt
    name: gpt-4o-mini
    batch: {mode: batch, max_requests: 1000, on_expired: sync}
    price: {input_per_mtok: 1, output_per_mtok: 2, batch_discount: 0.4}
  - id: sim
    name: sim-chat
    provider: sim
run:
  batch: {mode: batch, max_bytes: 1000000, poll_every: 2m, keep_files: true}
personas: [{id: p}]
questionnaire:
  options: [{id: "1", text: "1. no", weight: 1}, {id: "2", text: "2. yes", weight: 2}]
  items: [{id: "1", text: "I like batches."}]
`

func TestBatchKeys(t *testing.T) {
	s, err := Parse([]byte(batchSpec), "spec.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	gpt := s.BatchSettings(s.Models[0])
	want := experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: 1000, MaxBytes: 1_000_000,
		PollEvery: experiment.Duration(2 * time.Minute), OnExpired: experiment.OnExpiredSync, KeepFiles: true}
	if gpt != want {
		t.Errorf("gpt's batch settings %+v, want %+v (its own over run.batch's)", gpt, want)
	}
	sim := s.BatchSettings(s.Models[1])
	want = experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: experiment.BatchMaxRequestsOpenAI,
		MaxBytes: 1_000_000, PollEvery: experiment.Duration(2 * time.Minute), OnExpired: experiment.OnExpiredResubmit,
		KeepFiles: true}
	if sim != want {
		t.Errorf("sim's batch settings %+v, want %+v (run.batch's and the defaults)", sim, want)
	}
	if d := s.Models[0].Price.BatchDiscount; d == nil || *d != 0.4 {
		t.Errorf("batch_discount %v, want 0.4", d)
	}
	// The resolved spec's JSON (the workflow input) reads back with the same settings.
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseInput(js, "input")
	if err != nil {
		t.Fatal(err)
	}
	if back.BatchSettings(back.Models[0]) != gpt || back.BatchSettings(back.Models[1]) != sim {
		t.Errorf("after a JSON round trip: %+v, %+v", back.BatchSettings(back.Models[0]), back.BatchSettings(back.Models[1]))
	}
}

func TestBatchDefaults(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(strings.Replace(batchSpec,
		"    batch: {mode: batch, max_requests: 1000, on_expired: sync}\n", "", 1),
		"  batch: {mode: batch, max_bytes: 1000000, poll_every: 2m, keep_files: true}\n", "  max_concurrency: 8\n", 1)), "spec.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	got := s.BatchSettings(s.Models[0])
	want := experiment.BatchSettings{Mode: experiment.BatchSync, MaxRequests: 50_000, MaxBytes: 200 << 20,
		PollEvery: experiment.Duration(time.Minute), OnExpired: experiment.OnExpiredResubmit}
	if got != want || s.Batched(s.Models[0]) {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
}

func TestBatchMistakes(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"unknown mode", "mode: batch, max_requests", "mode: bath, max_requests",
			`spec.yaml:5:19: models[0].batch.mode: unknown mode "bath" (did you mean "batch"?)`},
		{"too many requests", "max_requests: 1000", "max_requests: 60000",
			"spec.yaml:5:40: models[0].batch.max_requests: 60000 is out of range; want requests per batch from 1 to 50000"},
		{"too many bytes", "max_bytes: 1000000", "max_bytes: 300000000",
			"spec.yaml:11:35: run.batch.max_bytes: 300000000 is out of range"},
		{"poll too fast", "poll_every: 2m", "poll_every: 10ms",
			"spec.yaml:11:56: run.batch.poll_every: 10ms is out of range"},
		{"unknown policy", "on_expired: sync", "on_expired: retry",
			`spec.yaml:5:58: models[0].batch.on_expired: unknown policy "retry"`},
		{"unknown key", "on_expired: sync", "on_expire: sync",
			`spec.yaml:5:46: models[0].batch.on_expire: unknown key "on_expire" (did you mean "on_expired"?)`},
		{"keep_files not a boolean", "keep_files: true", "keep_files: yes please",
			"run.batch.keep_files: want true or false"},
		{"discount", "batch_discount: 0.4", "batch_discount: 1.5",
			"spec.yaml:6:68: models[0].price.batch_discount: 1.5 is out of range"},
		{"cumulative", "  batch: {mode: batch, max_bytes", "  cumulative: true\n  batch: {mode: batch, max_bytes",
			"spec.yaml:12:17: run.batch.mode: batch mode cannot run a cumulative spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(batchSpec, tt.from, tt.to, 1)
			if src == batchSpec {
				t.Fatalf("%q is not in the spec", tt.from)
			}
			_, err := Parse([]byte(src), "spec.yaml", "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to contain\n%s", err, tt.want)
			}
		})
	}
}
