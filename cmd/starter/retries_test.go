package main

import (
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestRetryLines: a pending activity that failed twice or more is shown with its attempt, its bound, when it is
// tried next and its last failure (type and message, on one line, cut short); one that failed once, or is on its
// first attempt, or whose attempt runs and has heartbeated since it started (a pass resumed after two kills), is
// not.
func TestRetryLines(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	fail := func(typ, msg string) *failurepb.Failure {
		return &failurepb.Failure{Message: msg, FailureInfo: &failurepb.Failure_ApplicationFailureInfo{
			ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{Type: typ}}}
	}
	pending := []*workflowpb.PendingActivityInfo{
		{ActivityType: &commonpb.ActivityType{Name: "CollectBatch"}, Attempt: 5, MaximumAttempts: 20,
			NextAttemptScheduleTime: timestamppb.New(now.Add(16 * time.Second)),
			LastFailure:             fail("", "collect batch b1 file f1: batch: result line:\n invalid character")},
		{ActivityType: &commonpb.ActivityType{Name: "SubmitBatch"}, Attempt: 2, MaximumAttempts: 30,
			LastFailure: fail("ServerError", "create batch: 500")},
		{ActivityType: &commonpb.ActivityType{Name: "RunSeedPass"}, Attempt: 1},
		{ActivityType: &commonpb.ActivityType{Name: "RunSeedPass"}, Attempt: 3, State: enumspb.PENDING_ACTIVITY_STATE_STARTED,
			LastStartedTime: timestamppb.New(now.Add(-time.Minute)), LastHeartbeatTime: timestamppb.New(now.Add(-time.Second)),
			LastFailure: fail("", "activity Heartbeat timeout")},
		{ActivityType: &commonpb.ActivityType{Name: "RunSeedPass"}, Attempt: 3,
			LastFailure: fail("Internal", strings.Repeat("store down ", 40))},
	}
	got := retryLines(pending, now)
	if len(got) != 2 {
		t.Fatalf("lines %q, want the two activities that failed twice or more", got)
	}
	if want := "retrying CollectBatch: attempt 5 of 20, next in 16s; last failure: collect batch b1 file f1: batch: result line: invalid character"; got[0] != want {
		t.Errorf("line\n%s\nwant\n%s", got[0], want)
	}
	if !strings.HasPrefix(got[1], "retrying RunSeedPass: attempt 3; last failure: Internal: store down") || !strings.HasSuffix(got[1], "…") ||
		len([]rune(got[1])) > 320 {
		t.Errorf("line %q", got[1])
	}
}
