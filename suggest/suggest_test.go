package suggest

import "testing"

func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{"on_eror", ` (did you mean "on_error"?)`},
		{"MODLES", ` (did you mean "models"?)`},
		{"x", ""},
		{"completely_different", ""},
	} {
		if got := DidYouMean(tc.got, []string{"on_error", "models", "rpm"}); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.got, got, tc.want)
		}
	}
	if got := DidYouMean("a", nil); got != "" {
		t.Errorf("DidYouMean without candidates = %q, want none", got)
	}
}
