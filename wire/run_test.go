package wire

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// TestInputControlKeys holds the one list of control keys: every key of the control part, named in Input's doc.
func TestInputControlKeys(t *testing.T) {
	want := []string{"run_id", "output", "state", "retry_failed", "spec_digest"}
	if got := InputControlKeys(); !slices.Equal(got, want) {
		t.Fatalf("InputControlKeys() = %q, want %q", got, want)
	}
}

// TestInputRoundTrip: the encoder writes every control key over the spec's keys of the same name, and the
// decoder reads them back.
func TestInputRoundTrip(t *testing.T) {
	in := Input{Spec: json.RawMessage(`{"name":"x","run_id":"stale","spec_digest":"stale"}`), RunID: "r", Output: "o",
		State: &State{Next: 3}, RetryFailed: true, SpecDigest: "d"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(obj))
	if want := []string{"name", "output", "retry_failed", "run_id", "spec_digest", "state"}; !slices.Equal(keys, want) {
		t.Fatalf("encoded keys %q, want %q", keys, want)
	}
	if string(obj["run_id"]) != `"r"` || string(obj["spec_digest"]) != `"d"` {
		t.Fatalf("encoded %s: the control fields must replace the spec's keys of the same name", b)
	}
	var got Input
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.RunID != "r" || got.Output != "o" || got.State == nil || got.State.Next != 3 || !got.RetryFailed || got.SpecDigest != "d" {
		t.Fatalf("decoded %+v", got)
	}
}
