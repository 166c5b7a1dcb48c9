package activities

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// TestWorkerStoppingIsBenign: the attempt a worker's shutdown ends is of the benign category (the SDK logs it at
// debug level, not as an ERROR line after every Ctrl-C); other classes keep the default category.
func TestWorkerStoppingIsBenign(t *testing.T) {
	for class, want := range map[string]temporal.ApplicationErrorCategory{
		ClassWorkerStopping: temporal.ApplicationErrorCategoryBenign,
		ClassInternal:       temporal.ApplicationErrorCategoryUnspecified,
	} {
		var ae *temporal.ApplicationError
		if !errors.As(appError(class, true, 0, errors.New("x")), &ae) {
			t.Fatalf("%s: not an ApplicationError", class)
		}
		if ae.Category() != want || ae.Type() != class || ae.NonRetryable() {
			t.Errorf("%s: category %v, type %q, non-retryable %v; want category %v, type %[1]s, retryable", class, ae.Category(), ae.Type(), ae.NonRetryable(), want)
		}
	}
}
