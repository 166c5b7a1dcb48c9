package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Cases returns the cases of all that list names (comma-separated, in list's order), by name; the error names
// the first unknown one and every known name. It is how each benchmark reads its --cases flag.
func Cases[T any](list string, all []T, name func(T) string) ([]T, error) {
	var out []T
	for n := range strings.SplitSeq(list, ",") {
		i := slices.IndexFunc(all, func(c T) bool { return name(c) == strings.TrimSpace(n) })
		if i < 0 {
			names := make([]string, len(all))
			for j, c := range all {
				names[j] = name(c)
			}
			return nil, fmt.Errorf("--cases: unknown case %q; want some of %s", n, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}
