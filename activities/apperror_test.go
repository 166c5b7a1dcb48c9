package activities

import (
	"errors"
	"testing"

	"github.com/silicolab/silico/errclass"
	"go.temporal.io/sdk/temporal"
)

// TestWorkerStoppingIsBenign: the attempt a worker's shutdown ends is of the benign category (the SDK logs it at
// debug level, not as an ERROR line after every Ctrl-C); other classes keep the default category.
func TestWorkerStoppingIsBenign(t *testing.T) {
	for class, want := range map[string]temporal.ApplicationErrorCategory{
		errclass.WorkerStopping: temporal.ApplicationErrorCategoryBenign,
		errclass.Internal:       temporal.ApplicationErrorCategoryUnspecified,
	} {
		var ae *temporal.ApplicationError
		if !errors.As(appError(class, errors.New("x")), &ae) {
			t.Fatalf("%s: not an ApplicationError", class)
		}
		if ae.Category() != want || ae.Type() != class || ae.NonRetryable() {
			t.Errorf("%s: category %v, type %q, non-retryable %v; want category %v, type %[1]s, retryable", class, ae.Category(), ae.Type(), ae.NonRetryable(), want)
		}
	}
}

// TestAppErrorRetriesWhatTheTableRetries: an activity's error of every class of the table is retryable exactly
// when the table says the class is Retried, the same rule errclass.NonRetryable applies to the workflow's retry
// policies.
func TestAppErrorRetriesWhatTheTableRetries(t *testing.T) {
	for _, in := range errclass.Table {
		var ae *temporal.ApplicationError
		if !errors.As(appError(string(in.Class), errors.New("x")), &ae) {
			t.Fatalf("%s: not an ApplicationError", in.Class)
		}
		if want := in.Retry != errclass.Retried; ae.NonRetryable() != want {
			t.Errorf("%s (%v): non-retryable %v, want %v", in.Class, in.Retry, ae.NonRetryable(), want)
		}
	}
}
