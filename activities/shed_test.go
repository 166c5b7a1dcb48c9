package activities

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

var err429 = &llm.Error{Class: errclass.RateLimited, Status: 429, Code: "rate_limit_exceeded", RetryAfter: time.Second}

// Shed 429s landing together, with no answer between, do not open the breaker and are charged to no cell; the
// first 429 after them that the limiter takes for the account's limit does.
func TestShed429sDoNotTripTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, b := newTestJudge(3, wire.PassProgress{}, true)
		for c := range 20 {
			got := j.shed(admitted(t, b), c, err429, time.Millisecond, time.Now(), 100)
			if got.verdict != retryCell || got.tripped || got.tries.Transient != 0 || got.tries.Sent != 1 {
				t.Fatalf("shed 429 of cell %d: %+v, want a retry, one request, no try charged", c, got)
			}
		}
		if b.State().Open {
			t.Fatalf("20 shed 429s opened the breaker")
		}
		// They count in the wall all the same: the first 429 taken for the account's limit completes it.
		if got := j.failure(admitted(t, b), 0, err429, time.Millisecond, time.Now(), 100); !got.tripped || !b.State().Open {
			t.Fatalf("a 429 of the account's limit after 20 shed ones did not open the breaker: %+v", got)
		}
	})
}
