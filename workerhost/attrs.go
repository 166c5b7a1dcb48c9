package workerhost

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/silicolab/silico/wire"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// EnsureSearchAttributes makes sure the namespace has silico's custom search attributes
// (wire.SearchAttributes), creating the missing ones through the operator service. It returns nil when
// they all exist afterwards. When they cannot be created (no permission, a server that refuses), the error
// carries the temporal CLI commands that create them; runs work without them, only unsearchable by experiment.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	// The frontend's namespace cache refreshes every 10 seconds by default; a new attribute is usable after it.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	want := wire.SearchAttributes()
	missing, err := missingAttrs(ctx, c, namespace, want)
	if err != nil {
		return fmt.Errorf("list search attributes: %w; %s", err, createHint(namespace, want, sortedKeys(want)))
	}
	if len(missing) == 0 {
		return usable(ctx, c, namespace, want)
	}
	add := make(map[string]enums.IndexedValueType, len(missing))
	for _, n := range missing {
		add[n] = want[n]
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: add,
	}); err != nil {
		// Another worker starting at the same moment may have created them.
		if again, lerr := missingAttrs(ctx, c, namespace, want); lerr == nil && len(again) == 0 {
			return nil
		}
		return fmt.Errorf("create search attributes %s: %w; %s", strings.Join(missing, ", "), err, createHint(namespace, want, missing))
	}
	// Some visibility stores register them asynchronously.
	for {
		missing, err = missingAttrs(ctx, c, namespace, want)
		if err == nil && len(missing) == 0 {
			return usable(ctx, c, namespace, want)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("search attributes %s not registered in time; %s", strings.Join(missing, ", "), createHint(namespace, want, missing))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// usable waits until the frontend accepts the attributes in a visibility query. A new attribute is listed at
// once, but the frontend's namespace cache maps it only after its next refresh (seconds): until then a workflow
// start that sets it fails with "no mapping defined for search attribute".
func usable(ctx context.Context, c client.Client, namespace string, want map[string]enums.IndexedValueType) error {
	var parts []string
	for _, n := range sortedKeys(want) {
		parts = append(parts, n+" = 'probe'")
	}
	query := strings.Join(parts, " AND ")
	for {
		_, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query})
		if err == nil || !namesAny(err.Error(), want) {
			// Usable, or a server that cannot answer such a query (a visibility store without custom
			// queries, no permission to count): the probe cannot tell, and the attributes are listed.
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("search attributes registered but not usable yet (%v); start runs again in a minute", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func missingAttrs(ctx context.Context, c client.Client, namespace string, want map[string]enums.IndexedValueType) ([]string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, name := range sortedKeys(want) {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// createHint is what an operator runs to create the attributes.
func createHint(namespace string, want map[string]enums.IndexedValueType, names []string) string {
	cmds := make([]string, 0, len(names))
	for _, n := range names {
		typ := strings.TrimPrefix(want[n].String(), "INDEXED_VALUE_TYPE_")
		typ = strings.ToUpper(typ[:1]) + strings.ToLower(typ[1:])
		cmds = append(cmds, fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type %s", namespace, n, typ))
	}
	return "an operator of the cluster can create them with:\n  " + strings.Join(cmds, "\n  ")
}

func sortedKeys(m map[string]enums.IndexedValueType) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// namesAny reports whether text names one of the attributes: an error about them, not about the query itself.
func namesAny(text string, want map[string]enums.IndexedValueType) bool {
	for n := range want {
		if strings.Contains(text, n) {
			return true
		}
	}
	return false
}
