package activities

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/llm"
)

var err429 = &llm.Error{Class: errclass.RateLimited, Status: 429, Code: "rate_limit_exceeded", RetryAfter: time.Second}

// Shed 429s landing together, with no answer between, are not a wall of rate limits: the breaker stays closed
// and no try is charged. The same 429s judged as the account's limit open it, as before.
func TestShed429sDoNotTripTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, b := newTestJudge(3, Progress{}, true)
		for c := range 20 {
			got := j.shed(admitted(t, b), c, err429, time.Millisecond, time.Now(), 100)
			if got.verdict != retryCell || got.tripped || got.tries.Transient != 0 || got.tries.Sent != 1 {
				t.Fatalf("shed 429 of cell %d: %+v, want a retry, one request, no try charged", c, got)
			}
		}
		if b.State().Open {
			t.Fatalf("20 shed 429s opened the breaker")
		}
		var tripped bool
		for c := range 20 {
			tripped = tripped || j.failure(admitted(t, b), c, err429, time.Millisecond, time.Now(), 100).tripped
		}
		if !tripped || !b.State().Open {
			t.Fatalf("20 429s of the account's limit did not open the breaker")
		}
	})
}
