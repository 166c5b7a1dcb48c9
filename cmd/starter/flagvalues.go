package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/silicolab/silico/suggest"
)

// seedsValue is --seeds: whole numbers, comma-separated or repeated. Its errors say so, where pflag's
// Int64Slice showed strconv.ParseInt's.
type seedsValue struct {
	seeds   *[]int64
	changed bool
}

func (v *seedsValue) Type() string { return "ints" }

func (v *seedsValue) String() string {
	parts := make([]string, len(*v.seeds))
	for i, s := range *v.seeds {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(parts, ",")
}

// Set replaces the default on the first use and appends on later ones, as pflag's slices do.
func (v *seedsValue) Set(s string) error {
	var seeds []int64
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a seed: seeds are whole numbers, comma-separated, e.g. --seeds 1,2,3", f)
		}
		seeds = append(seeds, n)
	}
	if !v.changed {
		*v.seeds = nil
	}
	*v.seeds = append(*v.seeds, seeds...)
	v.changed = true
	return nil
}

// ageValue is a duration flag that takes days too: 7d, 36h, 30m, 1d12h. Go's durations stop at hours, and an
// age of cache entries is said in days.
type ageValue struct{ d *time.Duration }

func (v ageValue) Type() string { return "age" }

func (v ageValue) String() string {
	if *v.d == 0 {
		return "0"
	}
	return v.d.String()
}

func (v ageValue) Set(s string) error {
	d, err := parseAge(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// parseAge parses a duration that may begin with whole days ("7d", "1d12h"), followed by what
// time.ParseDuration takes.
func parseAge(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q is not an age: give days, hours or minutes, e.g. 7d, 12h, 30m or 1d12h", s)
	var days time.Duration
	rest := strings.TrimSpace(s)
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		n, err := strconv.ParseUint(rest[:i], 10, 16)
		if err != nil {
			return 0, bad
		}
		days, rest = time.Duration(n)*24*time.Hour, rest[i+1:]
		if rest == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, bad
	}
	if days > 0 && d < 0 {
		return 0, bad // "1d-2h"
	}
	return days + d, nil
}

// unknownID is the error of an id flag (--item, --persona, --model: what the flag names) that names no element
// of the spec: what was given, the closest id when one is close, and the ids there are, the first few when they
// are many.
func unknownID(what, got string, ids []string) error {
	return fmt.Errorf("--%s %s: the spec has no %s with this id%s; its %s ids: %s", what, got, what,
		suggest.DidYouMean(got, ids), what, shortList(ids, 12))
}

// shortList joins the first n ids and says how many more there are.
func shortList(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s, … (%d more)", strings.Join(ids[:n], ", "), len(ids)-n)
}

// idsOf lists the ids of a spec's elements.
func idsOf[T any](elems []T, id func(T) string) []string {
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = id(e)
	}
	return out
}
