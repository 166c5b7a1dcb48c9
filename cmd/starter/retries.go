package main

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
)

// Nothing retries in silence. Temporal retries a failed activity by its retry policy and keeps, for each pending
// activity, its attempt and its last failure; DescribeWorkflowExecution returns them, and the Web UI shows them in
// the run's pending activities, on every poll. The workflow itself learns of a failure only when the activity's
// retries are used up, so the starter's progress line and `status` read them where they are true within one
// poll: from the server, as the Web UI does.

// retryShownFrom is the attempt from which a pending activity's failures are shown: it has failed twice.
const retryShownFrom = 3

// retryLines says, for each pending activity that has failed at least twice and is being retried, what and why:
// "retrying SubmitBatch: attempt 5 of 30, next in 16s; last failure: create batch: …". In the order given. An
// attempt that is running and has heartbeated since it started is not shown: it is past its failures for now (a
// pass resumed after its worker was killed twice keeps its attempt count, and goes on as well as ever).
func retryLines(pending []*workflowpb.PendingActivityInfo, now time.Time) []string {
	var out []string
	for _, pa := range pending {
		if pa.GetAttempt() < retryShownFrom || pa.GetLastFailure() == nil {
			continue
		}
		if pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && pa.GetLastHeartbeatTime() != nil &&
			pa.GetLastStartedTime() != nil && pa.GetLastHeartbeatTime().AsTime().After(pa.GetLastStartedTime().AsTime()) {
			continue
		}
		line := "retrying " + pa.GetActivityType().GetName() + ": attempt " + fmt.Sprint(pa.GetAttempt())
		if m := pa.GetMaximumAttempts(); m > 0 {
			line += fmt.Sprintf(" of %d", m)
		}
		if next := pa.GetNextAttemptScheduleTime(); next != nil && next.AsTime().After(now) {
			line += ", next in " + next.AsTime().Sub(now).Round(time.Second).String()
		}
		out = append(out, line+"; last failure: "+shorten(failureText(pa.GetLastFailure().GetMessage(),
			pa.GetLastFailure().GetApplicationFailureInfo().GetType())))
	}
	return out
}

// failureText is a failure's message with its type ("ServerError: …") when it has one.
func failureText(msg, typ string) string {
	if typ == "" || strings.HasPrefix(msg, typ) {
		return msg
	}
	return typ + ": " + msg
}

// shortMax is how much of a failure a progress line shows.
const shortMax = 240

// shorten is s on one line, cut to shortMax characters.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > shortMax {
		return string(r[:shortMax]) + "…"
	}
	return s
}
