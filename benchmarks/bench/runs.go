package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/store"
)

// Rows is what a run's results.jsonl says: cells answered and failed, the error classes of the failed ones, and
// the most requests one cell took (its attempts).
type Rows struct {
	OK, Failed  int
	Classes     map[string]int
	MaxAttempts int
}

// CountRows reads the results.jsonl at path.
func CountRows(path string) (Rows, error) {
	out := Rows{Classes: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	err = results.ReadJSONL(f, func(r results.Row) error {
		out.MaxAttempts = max(out.MaxAttempts, r.Attempts)
		if r.Status == store.StatusFailed {
			out.Failed++
			class := r.ErrorClass
			if class == "" {
				class = "(empty)"
			}
			out.Classes[class]++
		} else {
			out.OK++
		}
		return nil
	})
	return out, err
}

// PassAttempts reads the attempts of each RunSeedPass activity of workflow id from its history: the attempt
// number of its ActivityTaskStarted event (written when the last attempt ends), or of the pending activity.
func PassAttempts(ctx context.Context, st *Stack, id string) ([]int, error) {
	iter := st.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var order []int64
	attempts := map[int64]int{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return nil, err
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == "RunSeedPass" {
				order = append(order, ev.GetEventId())
				attempts[ev.GetEventId()] = 0
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := ev.GetActivityTaskStartedEventAttributes()
			if _, ok := attempts[a.GetScheduledEventId()]; ok {
				attempts[a.GetScheduledEventId()] = int(a.GetAttempt())
			}
		}
	}
	out := make([]int, len(order))
	for i, e := range order {
		out[i] = attempts[e]
	}
	if len(out) == 0 {
		return nil, errors.New("no RunSeedPass activity in the history")
	}
	return out, nil
}

// Classes writes "ServerError 21, Transport 3", most frequent first.
func Classes(m map[string]int) string {
	if len(m) == 0 {
		return "–"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
