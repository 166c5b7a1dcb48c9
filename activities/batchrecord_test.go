package activities

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

const batchRecordSpec = `{"name":"x","models":[{"id":"m","name":"gpt-4o-mini"}],
"personas":[{"id":"p","attributes":{"name":"A"}}],
"questionnaire":{"options":[{"id":"1","text":"1. No","weight":1},{"id":"2","text":"2. Yes","weight":2}],"items":[{"id":"1","text":"Q?"}]}}`

func openAILine(status int, body string) string {
	return `{"id":"batch_req_1","custom_id":"m/42/1/p","response":{"status_code":` + itoa(status) + `,"request_id":"r","body":` + body + `},"error":null}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestBatchRecordMatchesSync: a collected line gives the record a synchronous call with the same answer or the
// same failure gives, at the batch price; what never ran or failed transiently goes again.
func TestBatchRecordMatchesSync(t *testing.T) {
	spec, err := specfile.ParseInput([]byte(batchRecordSpec), "input")
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Cell(0)
	syncPrice, _ := llm.PriceFor(spec.Models[0])
	batchPrice, _ := llm.BatchPriceFor(spec.Models[0])
	sync := &recorder{spec: spec, price: syncPrice, priced: true}
	const key = "sk-test-SECRETSECRETSECRET1234"
	redact := llm.Redactor(key)

	answer := `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"2. Yes ` + key + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":3,"total_tokens":43}}`
	r, err := batchformat.ParseOpenAI([]byte(openAILine(200, answer)), redact)
	if err != nil {
		t.Fatal(err)
	}
	got := batchResultOutcome(spec, c, wire.FormatOpenAI, r, batchPricing{batchPrice, true}, redact, 1, 5)
	want := sync.answerRecord(c, respcache.Answer{Text: "2. Yes [REDACTED]", PromptTokens: 40, CompletionTokens: 3, FinishReason: llm.FinishStop})
	want.CostUSD /= 2
	want.LatencyMS, want.Attempts, want.Tries = 5, 1, 1
	if got.Again || got.Record == nil || !reflect.DeepEqual(*got.Record, want) || got.Answer == nil || got.Answer.Text != want.Raw {
		t.Errorf("answer: %+v\nwant record %+v", got, want)
	}
	if got.Record.Status != store.StatusOK || got.Record.OptionID != "2" || strings.Contains(got.Record.Raw, key) {
		t.Errorf("answer record %+v: want ok, option 2, no key", got.Record)
	}

	// The status_code trap: a 400 with error null is a permanent failure, recorded as a synchronous 400 is.
	bad := `{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	r, _ = batchformat.ParseOpenAI([]byte(openAILine(400, bad)), redact)
	got = batchResultOutcome(spec, c, wire.FormatOpenAI, r, batchPricing{batchPrice, true}, redact, 2, 7)
	wantFail := failedRecord(c.Index, r.Err, wire.Tries{Sent: 2, Transient: 2, LatencyMS: 7})
	if got.Again || got.Record == nil || !reflect.DeepEqual(*got.Record, wantFail) || got.Answer != nil {
		t.Errorf("400: %+v\nwant %+v", got.Record, wantFail)
	}
	if got.Record.ErrorClass != "InvalidRequest" || got.Record.ErrorCode != "context_length_exceeded" {
		t.Errorf("400 record %+v", got.Record)
	}

	again := map[string]string{
		"500":     openAILine(500, `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`),
		"expired": `{"id":"b","custom_id":"m/42/1/p","response":null,"error":{"code":"batch_expired","message":"x"}}`,
		"garbled": openAILine(200, `{"choices":[]}`),
	}
	for name, line := range again {
		r, err := batchformat.ParseOpenAI([]byte(line), redact)
		if err != nil {
			t.Fatal(err)
		}
		if got := batchResultOutcome(spec, c, wire.FormatOpenAI, r, batchPricing{batchPrice, true}, redact, 1, 0); !got.Again || got.Record != nil || got.Reason == "" {
			t.Errorf("%s: %+v, want it submitted again", name, got)
		}
	}

	// Anthropic's message answer, unpriced.
	msg := `{"custom_id":"x","result":{"type":"succeeded","message":{"type":"message","content":[{"type":"text","text":"1"}],"usage":{"input_tokens":9,"output_tokens":1}}}}`
	ar, _ := batchformat.ParseAnthropic([]byte(msg), redact)
	got = batchResultOutcome(spec, c, wire.FormatAnthropic, ar, batchPricing{}, redact, 1, 0)
	if got.Record == nil || got.Record.OptionID != "1" || got.Record.PromptTokens != 9 || got.Record.CostUSD != 0 {
		t.Errorf("anthropic: %+v", got.Record)
	}
}

// TestRecordKeepsProvenance: the record of an answer keeps the served model and fingerprint its provider sent,
// from a batch line of each shape (redacted like the text) and from the response cache, which keeps those of the
// call that produced the answer.
func TestRecordKeepsProvenance(t *testing.T) {
	spec, err := specfile.ParseInput([]byte(batchRecordSpec), "input")
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Cell(0)
	const key = "sk-test-SECRETSECRETSECRET1234"
	redact := llm.Redactor(key)
	openai := `{"id":"c","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_` + key + `",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"2"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":1}}`
	or, err := batchformat.ParseOpenAI([]byte(openAILine(200, openai)), redact)
	if err != nil {
		t.Fatal(err)
	}
	ant := `{"custom_id":"x","result":{"type":"succeeded","message":{"type":"message","model":"claude-x-20250514","content":[{"type":"text","text":"1"}],"usage":{"input_tokens":9,"output_tokens":1}}}}`
	ar, err := batchformat.ParseAnthropic([]byte(ant), redact)
	if err != nil {
		t.Fatal(err)
	}
	gem := `{"key":"x","response":{"candidates":[{"content":{"role":"model","parts":[{"text":"1"}]},"finishReason":"STOP"}],` +
		`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1},"modelVersion":"gemini-x-001"}}`
	gr, err := batchformat.ParseGemini([]byte(gem), redact)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f         wire.BatchFormat
		r         batchformat.Result
		model, fp string
	}{
		{wire.FormatOpenAI, or, "gpt-4o-mini-2024-07-18", "fp_[REDACTED]"},
		{wire.FormatAnthropic, ar, "claude-x-20250514", ""},
		{wire.FormatGemini, gr, "gemini-x-001", ""},
	} {
		got := batchResultOutcome(spec, c, tc.f, tc.r, batchPricing{}, redact, 1, 0)
		if got.Record == nil || got.Record.ServedModel != tc.model || got.Record.SystemFingerprint != tc.fp {
			t.Errorf("%s: record %+v; want served by %q %q", tc.f, got.Record, tc.model, tc.fp)
			continue
		}
		// Through the cache, as a later run reads it.
		k := respcache.Key("sim", llm.Request{Model: "m"})
		back, err := respcache.Read(respcache.Entry(k, "m", "run", *got.Answer, time.Now()), k)
		if err != nil {
			t.Fatal(err)
		}
		if rec := answerRecord(spec, c, back, experiment.Price{}, false); rec.ServedModel != tc.model || rec.SystemFingerprint != tc.fp {
			t.Errorf("%s: cached record served by %q %q, want %q %q", tc.f, rec.ServedModel, rec.SystemFingerprint, tc.model, tc.fp)
		}
	}
}
