package activities

import (
	"reflect"
	"slices"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
)

// nameRegistry records the names activities are registered under.
type nameRegistry struct {
	worker.ActivityRegistry
	names []string
}

func (r *nameRegistry) RegisterActivityWithOptions(_ any, o activity.RegisterOptions) {
	r.names = append(r.names, o.Name)
}

// TestRegisterHasEveryActivity: Register registers every exported method of *Activities (what registering the
// struct registered before), each under the method's name, which the recorded histories hold.
func TestRegisterHasEveryActivity(t *testing.T) {
	var r nameRegistry
	Register(&r, &Activities{})
	var want []string
	typ := reflect.TypeFor[*Activities]()
	for m := range typ.Methods() {
		want = append(want, m.Name)
	}
	got := slices.Sorted(slices.Values(r.names))
	if !slices.Equal(got, want) {
		t.Fatalf("Register registers %q, want the methods of *Activities %q", got, want)
	}
}
