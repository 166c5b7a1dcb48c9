package activities

import (
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// rejectedLines are the records of the cells whose input lines a batch the provider failed as a whole names
// (OpenAI's errors.data[].line, counted from 1 in the input file, which has one line per request in the order of
// reqs): failed, errclass.BatchLineRejected, with the provider's code and reason (redacted), attempts the
// round's. It marks their requests seen, so they are not submitted again. A line outside the file names no cell;
// a failure that names no line (token_limit_exceeded) records nothing, and the workflow handles it by its code.
func rejectedLines(b wire.BatchInfo, reqs []batchRequest, seen []bool, redact func(string) string, attempts int) []store.Record {
	var out []store.Record
	for _, f := range b.Failures {
		i := f.Line - 1
		if f.Line <= 0 || i >= len(reqs) || seen[i] {
			continue
		}
		seen[i] = true
		for _, c := range reqs[i].cells() {
			out = append(out, store.Record{Index: c, Status: store.StatusFailed, ErrorClass: errclass.BatchLineRejected,
				ErrorCode: f.Code, ErrorMessage: redact("the provider failed batch " + b.ID + " because of this cell's line: " + f.String()),
				Attempts: attempts, Tries: attempts})
		}
	}
	return out
}
