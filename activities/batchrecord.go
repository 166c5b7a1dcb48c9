package activities

import (
	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// batchPricing is what a batch pass charges its answers at: the model's batch price (llm.BatchPriceFor).
type batchPricing struct {
	price  experiment.Price
	priced bool
}

// batchOutcome is what one result line of a provider batch means for its cell.
type batchOutcome struct {
	// Record is the cell's record when the line settles it (an answer, or a failure that retrying cannot cure).
	Record *store.Record
	// Answer is the answer to keep in the response cache, for a record that has one.
	Answer *respcache.Answer
	// Again says the cell must be submitted again (never ran, or failed transiently), within run.max_attempts.
	Again bool
	// Reason is why, for Again: the provider's not-run reason or the transient failure's class.
	Reason string
}

// batchResultOutcome maps result r of cell c, from a batch of format f, onto the record a synchronous call with
// the same answer or the same failure gets: an answer is matched to the item's options, its tokens recorded and
// its cost taken at the batch price; a failure that llm.Classify would call permanent (a 400, an auth error, a
// quota) is recorded with the same class, code and message. A line that never ran, or failed transiently (5xx,
// a malformed body), goes again. Texts are redacted with redact; attempts is how many times the cell was
// submitted (each submission is a request and a try of the cell: every round counts against run.max_attempts),
// latencyMS what the record shows as its latency (the batch's time from creation to its end).
//
// The records are built by the synchronous pass's own answerRecord and describe, so the two cannot drift apart.
func batchResultOutcome(spec *experiment.Spec, c experiment.Cell, f wire.BatchFormat, r batchformat.Result, pr batchPricing,
	redact func(string) string, attempts int, latencyMS float64) batchOutcome {
	switch r.Outcome {
	case batchformat.NotRun:
		return batchOutcome{Again: true, Reason: r.Reason}
	case batchformat.Unreadable:
		rec := unreadableRecord(c.Index, r, attempts, latencyMS)
		return batchOutcome{Record: &rec}
	case batchformat.Errored:
		if r.Err.Class.Retryable() {
			return batchOutcome{Again: true, Reason: string(r.Err.Class)}
		}
		rec := store.Record{Index: c.Index, Status: store.StatusFailed, ErrorClass: string(r.Err.Class),
			ErrorCode: r.Err.Code, ErrorMessage: describe(r.Err), LatencyMS: latencyMS, Attempts: attempts, Tries: attempts}
		return batchOutcome{Record: &rec}
	}
	read := llm.ChatAnswer
	switch f {
	case wire.FormatAnthropic:
		read = llm.AnthropicAnswer
	case wire.FormatGemini:
		read = llm.GeminiAnswer
	}
	resp, err := read(r.Body)
	if err != nil {
		// A malformed answer is a transport failure for a synchronous call too: asked again.
		return batchOutcome{Again: true, Reason: string(llm.Classify(err).Class)}
	}
	a := respcache.AnswerOf(resp.Redacted(redact))
	rec := answerRecord(spec, c, a, pr.price, pr.priced)
	rec.LatencyMS, rec.Attempts, rec.Tries = latencyMS, attempts, attempts
	return batchOutcome{Record: &rec, Answer: &a}
}

// embedOutcome is what one result line of an embeddings batch means for the cells of its request.
type embedOutcome struct {
	// Records are the records of the request's cells when the line settles them.
	Records []store.Record
	// Keep are the vectors to keep in the response cache: one per text, under the request's key of that text.
	Keep []keptVector
	// Again says the request's cells must be submitted again; Reason says why.
	Again  bool
	Reason string
}

// keptVector is the vector of text Text of a request, to keep in the response cache.
type keptVector struct {
	Text   int
	Vector respcache.Vector
}

// embedResultOutcome maps result r of embeddings request req onto the records a synchronous call of the same
// request with the same answer or failure gets (embedAnswered, failedRecord): every text's vector, checked with
// check as the synchronous call checks its vectors (one finite vector of the model's length per input), recorded
// for each cell that has the text, its share of the prompt tokens on the text's first cell and its cost at the
// batch price; a permanent failure recorded on every cell. A line that never ran, failed transiently or answered
// malformed vectors goes again, as a synchronous call would be tried again.
func embedResultOutcome(req batchRequest, r batchformat.Result, check func([][]float32) error, pr batchPricing,
	attempts int, latencyMS float64) embedOutcome {
	switch r.Outcome {
	case batchformat.NotRun:
		return embedOutcome{Again: true, Reason: r.Reason}
	case batchformat.Unreadable:
		var o embedOutcome
		for _, idx := range req.cells() {
			o.Records = append(o.Records, unreadableRecord(idx, r, attempts, latencyMS))
		}
		return o
	case batchformat.Errored:
		if r.Err.Class.Retryable() {
			return embedOutcome{Again: true, Reason: string(r.Err.Class)}
		}
		var o embedOutcome
		for _, idx := range req.cells() {
			o.Records = append(o.Records, failedRecord(idx, r.Err, wire.Tries{Sent: attempts, Transient: attempts, LatencyMS: latencyMS}))
		}
		return o
	}
	b := req.Embed
	resp, err := llm.EmbedAnswer(r.Body, len(b.texts))
	if err == nil {
		err = check(resp.Vectors)
	}
	if err != nil {
		return embedOutcome{Again: true, Reason: string(llm.Classify(err).Class)}
	}
	var o embedOutcome
	embedAnswered(b, resp, pr.price, pr.priced, func(text int, rec store.Record, keep *respcache.Vector) {
		rec.LatencyMS, rec.Attempts, rec.Tries = latencyMS, attempts, attempts
		o.Records = append(o.Records, rec)
		if keep != nil {
			o.Keep = append(o.Keep, keptVector{Text: text, Vector: *keep})
		}
	})
	return o
}

// unreadableRecord is the record of cell idx whose result line r could not be read: failed, of class
// errclass.BatchUnreadable, with the reason (already redacted). It settles the cell, as a permanent failure does:
// the provider ran the request (it answered something), and the line would read the same way again; the other
// lines of the file are recorded as they are.
func unreadableRecord(idx int, r batchformat.Result, attempts int, latencyMS float64) store.Record {
	return store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: errclass.BatchUnreadable,
		ErrorCode: "unreadable_result", ErrorMessage: "the provider's result could not be read: " + r.Reason,
		LatencyMS: latencyMS, Attempts: attempts, Tries: attempts}
}
