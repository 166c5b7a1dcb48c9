package tests

import (
	"context"
	"database/sql"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workflows"
)

// requestedCells returns the cells of the simulator's requests after the first skip, with how often each was asked.
func requestedCells(s *stack, skip int) map[string]int {
	out := map[string]int{}
	for _, r := range s.sim.Requests()[skip:] {
		out[r.Cell]++
	}
	return out
}

// rowsByCell reads a run's results.jsonl: cell id → the cell's columns without its index (which moves when the
// grid grows).
func rowsByCell(t *testing.T, dir string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	if err := results.ReadJSONL(f, func(r results.Row) error {
		out[r.CellID] = results.CellColumns(r)[1:]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// cellKeys maps the cache key of every cell of spec (without history) to its cell id, as a pass computes it.
func cellKeys(spec *experiment.Spec) map[store.CacheKey]string {
	out := map[store.CacheKey]string{}
	for i := range spec.NumCells() {
		c := spec.Cell(i)
		m := spec.Models[c.Model]
		msgs, err := spec.Render(c, nil)
		if err != nil {
			panic(err)
		}
		out[respcache.Key(respcache.Endpoint(m), llm.Request{Model: m.Name, Messages: msgs, Seed: spec.CallSeed(c), Params: m.Params})] = spec.CellID(c)
	}
	return out
}

// TestCacheAnswersAnEditedSpecsUnchangedCells runs a spec, then the spec with one item's text changed and one
// persona added: the second run calls the simulator for exactly the cells the edit made new (from its request
// log), answers the others from the cache, and their cell columns equal the first run's.
func TestCacheAnswersAnEditedSpecsUnchangedCells(t *testing.T) {
	s := newStack(t, sim.Config{})
	a := gridSpec(1, 2, 6, 4)
	ra := s.run(t, "cache-first", a)
	if n := len(s.sim.Requests()); n != 48 || ra.Summary.Cached != 0 {
		t.Fatalf("first run: %d requests, %d cached; want 48 requests, none cached", n, ra.Summary.Cached)
	}

	b := gridSpec(1, 2, 6, 5) // persona p4 added
	b.Questionnaire.Items[2].Text = "A changed statement."
	before := len(s.sim.Requests())
	rb := s.run(t, "cache-edited", b)
	var want []string
	for i := range b.NumCells() {
		c := b.Cell(i)
		if c.Item == 2 || c.Persona == 4 {
			want = append(want, b.CellID(c))
		}
	}
	asked := requestedCells(s, before)
	if got := slices.Sorted(maps.Keys(asked)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("the edited run asked for cells\n%v\nwant only the new ones\n%v", got, want)
	}
	for c, n := range asked {
		if n != 1 {
			t.Errorf("cell %s asked %d times", c, n)
		}
	}
	if rb.Summary.Cached != 60-len(want) || rb.Summary.OK+rb.Summary.Unparsed != 60 {
		t.Fatalf("edited run summary %+v: want %d of 60 cells cached, all answered", rb.Summary, 60-len(want))
	}
	first, second := rowsByCell(t, ra.OutputDir), rowsByCell(t, rb.OutputDir)
	same := 0
	for id, cols := range second {
		if slices.Contains(want, id) {
			continue
		}
		same++
		if !slices.Equal(cols, first[id]) {
			t.Errorf("cell %s answered from the cache differs from the run that paid for it:\n got %q\nwant %q", id, cols, first[id])
		}
	}
	if same != 60-len(want) {
		t.Fatalf("compared %d unchanged cells, want %d", same, 60-len(want))
	}
}

// TestCorruptedCacheEntriesAreMisses damages stored entries (a flipped byte in one answer; another entry moved
// under a third entry's key): a rerun calls exactly those cells again, counts the invalid entries, and replaces
// them, so a third run calls nothing.
func TestCorruptedCacheEntriesAreMisses(t *testing.T) {
	s := newStack(t, sim.Config{})
	spec := gridSpec(1, 1, 4, 3)
	res := s.run(t, "corrupt-first", spec)
	keys := cellKeys(&spec)
	if held, err := respcache.Held(context.Background(), s.store, &spec); err != nil || held["m0"] != 12 {
		t.Fatalf("respcache.Held after the first run = %v, %v; want 12 cells of m0", held, err)
	}

	db, err := sql.Open("sqlite", s.store.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sorted := slices.SortedFunc(maps.Keys(keys), func(a, b store.CacheKey) int { return strings.Compare(a.String(), b.String()) })
	flipped, moved, under := sorted[0], sorted[1], sorted[2]
	exec := func(q string, args ...any) {
		t.Helper()
		r, err := db.Exec(q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n, _ := r.RowsAffected(); n != 1 {
			t.Fatalf("%s changed %d rows, want 1", q, n)
		}
	}
	var value []byte
	if err := db.QueryRow("SELECT value FROM cache WHERE key = ?", flipped[:]).Scan(&value); err != nil {
		t.Fatal(err)
	}
	value[len(value)-1] ^= 0x01 // the answer's last character changes; the entry still decodes
	exec("UPDATE cache SET value = ? WHERE key = ?", value, flipped[:])
	exec("DELETE FROM cache WHERE key = ?", under[:])
	exec("UPDATE cache SET key = ? WHERE key = ?", under[:], moved[:])

	before := len(s.sim.Requests())
	res2 := s.run(t, "corrupt-second", spec)
	asked := requestedCells(s, before)
	want := []string{keys[flipped], keys[moved], keys[under]}
	if got := slices.Sorted(maps.Keys(asked)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("after the damage the rerun asked for %v, want exactly the damaged and missing cells %v", got, want)
	}
	if !reflect.DeepEqual(cellColumns(t, res.OutputDir), cellColumns(t, res2.OutputDir)) {
		t.Fatal("the rerun's cell columns differ from the first run's")
	}
	stats, err := s.store.CacheStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 || stats[0].Invalid != 2 || stats[0].Entries != 12 || stats[0].Hits != 9 {
		t.Fatalf("cache stats %+v: want 2 invalid entries counted, 12 entries again, 9 hits", stats)
	}
	before = len(s.sim.Requests())
	if res3 := s.run(t, "corrupt-third", spec); res3.Summary.Cached != 12 || len(s.sim.Requests()) != before {
		t.Fatalf("third run: %d cached, %d requests; want every cell from the repaired cache", res3.Summary.Cached, len(s.sim.Requests())-before)
	}
}

// TestCachePolicies runs each policy twice on a model of its own (the model name is part of the key, so the
// policies do not see each other's entries) and checks the calls made and the entries kept.
func TestCachePolicies(t *testing.T) {
	s := newStack(t, sim.Config{})
	run := func(id, model string, policy experiment.CachePolicy) (calls, cached int) {
		t.Helper()
		spec := gridSpec(1, 1, 4, 2)
		spec.Models[0].Name = model
		spec.Models[0].Cache = policy
		before := len(s.sim.Requests())
		res := s.run(t, id, spec)
		if res.Summary.OK+res.Summary.Unparsed != 8 {
			t.Fatalf("%s: summary %+v", id, res.Summary)
		}
		return len(s.sim.Requests()) - before, res.Summary.Cached
	}
	entries := func(model string) int {
		t.Helper()
		st, err := s.store.CacheStats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st {
			if m.Model == model {
				return m.Entries
			}
		}
		return 0
	}
	for _, c := range []struct {
		id, model    string
		policy       experiment.CachePolicy
		calls, cache int // calls made and cells served from the cache
		entries      int // entries of the model after the run
	}{
		{"off-1", "sim-off", experiment.CacheOff, 8, 0, 0},
		{"off-2", "sim-off", experiment.CacheOff, 8, 0, 0},
		{"read-1", "sim-read", experiment.CacheRead, 8, 0, 0}, // reads an empty cache, writes nothing
		{"read-2", "sim-read", experiment.CacheRead, 8, 0, 0},
		{"write-1", "sim-write", experiment.CacheWrite, 8, 0, 8},
		{"write-2", "sim-write", experiment.CacheWrite, 8, 0, 8}, // never reads: calls again, refreshes
		{"write-then-read", "sim-write", experiment.CacheRead, 0, 8, 8},
		{"rw-1", "sim-rw", "", 8, 0, 8}, // the default: read_write
		{"rw-2", "sim-rw", experiment.CacheReadWrite, 0, 8, 8},
	} {
		calls, cached := run(c.id, c.model, c.policy)
		if calls != c.calls || cached != c.cache || entries(c.model) != c.entries {
			t.Errorf("%s (cache: %q): %d calls, %d cached, %d entries; want %d, %d, %d",
				c.id, c.policy, calls, cached, entries(c.model), c.calls, c.cache, c.entries)
		}
	}
}

// TestTwoRunsAtOnceShareTheCache runs the same cells as two runs at the same time, on two workers with handles of
// their own on one store: a request one run is calling is claimed, and the other waits for its answer instead of
// paying for it too. Every cell of both runs is answered, the columns are equal, and no cell is asked twice more
// often than calls are in flight at once.
func TestTwoRunsAtOnceShareTheCache(t *testing.T) {
	s := newStackWorkers(t, sim.Config{Latency: sim.Latency{Fixed: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}}, 1)
	second, err := store.OpenSQLite(context.Background(), s.store.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Close() })
	other := *s
	other.store = second
	other.newWorker(t)

	spec := gridSpec(1, 4, 10, 10) // 400 cells in 4 passes
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = 8, 2
	ctx := withTimeout(t, 3*time.Minute)
	var runs []client.WorkflowRun
	for _, id := range []string{"twin-a", "twin-b"} {
		r, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: wire.TaskQueue},
			workflows.ExperimentWorkflow, specInput(t, spec))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	var res [2]wire.Result
	for i, r := range runs {
		if err := r.Get(ctx, &res[i]); err != nil {
			t.Fatalf("run %s: %v", r.GetID(), err)
		}
		if res[i].Summary.OK+res[i].Summary.Unparsed != 400 {
			t.Fatalf("run %s lost cells: %+v", r.GetID(), res[i].Summary)
		}
	}
	asked := requestedCells(s, 0)
	twice := 0
	for _, n := range asked {
		twice += n - 1
	}
	// At most max_concurrency × max_parallel_passes calls of one run are in flight at once.
	inFlight := spec.Run.MaxConcurrency * spec.Run.MaxParallelPasses
	t.Logf("%d cells asked, %d asked twice; cached: %d and %d", len(asked), twice, res[0].Summary.Cached, res[1].Summary.Cached)
	if len(asked) != 400 || twice > inFlight {
		t.Fatalf("%d distinct cells asked (want 400), %d asked more than once (want at most %d)", len(asked), twice, inFlight)
	}
	if res[0].Summary.Cached+res[1].Summary.Cached < 400-twice {
		t.Fatalf("cached %d + %d cells: the runs paid for each other's answers", res[0].Summary.Cached, res[1].Summary.Cached)
	}
	if !reflect.DeepEqual(cellColumns(t, res[0].OutputDir), cellColumns(t, res[1].OutputDir)) {
		t.Fatal("the two runs' cell columns differ")
	}
}

// TestABalancedRunSharesTheCacheWithThePlainRun runs a plain grid, then the same grid with balanced option
// order: the balanced run's as-written cells keep the plain cells' ids and prompts, so the cache answers them
// with identical cell columns and only the reversed cells (/rev) are asked; a third run of the balanced spec is
// all cache and gives every cell's columns as the run that paid for them. Every reversed cell's written answer
// is a canonical id at the shown position the row names.
func TestABalancedRunSharesTheCacheWithThePlainRun(t *testing.T) {
	s := newStack(t, sim.Config{})
	plain := gridSpec(1, 2, 3, 2)
	rp := s.run(t, "balanced-plain", plain)
	balanced := gridSpec(1, 2, 3, 2)
	balanced.Questionnaire.Order = &experiment.OrderSettings{Mode: experiment.OrderBalanced}
	before := len(s.sim.Requests())
	rb := s.run(t, "balanced-paid", balanced)
	if rb.Summary.Cells != 2*rp.Summary.Cells || rb.Summary.Cached != rp.Summary.Cells {
		t.Fatalf("balanced run %+v: want %d cells, %d of them cached", rb.Summary, 2*rp.Summary.Cells, rp.Summary.Cells)
	}
	for c, n := range requestedCells(s, before) {
		if !strings.HasSuffix(c, experiment.ReversedCellSuffix) || n != 1 {
			t.Errorf("the balanced run asked cell %s %d times; want each reversed cell once, no other", c, n)
		}
	}
	first, paid := rowsByCell(t, rp.OutputDir), rowsByCell(t, rb.OutputDir)
	for id, cols := range first {
		if !slices.Equal(paid[id], cols) {
			t.Errorf("as-written cell %s differs from the plain run's:\n got %q\nwant %q", id, paid[id], cols)
		}
	}
	reversed, answered := 0, 0
	for _, r := range readRows(t, rb.OutputDir) {
		if !strings.HasSuffix(r.CellID, experiment.ReversedCellSuffix) {
			continue
		}
		reversed++
		shown := strings.Split(r.Shown, results.ShownDelimiter)
		if r.Order != string(experiment.OrderReversed) || !slices.Equal(shown, []string{"5", "4", "3", "2", "1"}) {
			t.Errorf("cell %s: order %q shown %q, want reversed 5|4|3|2|1", r.CellID, r.Order, r.Shown)
		}
		if r.OptionID != "" && (r.ShownPosition == nil || shown[*r.ShownPosition-1] != r.OptionID) {
			t.Errorf("cell %s: option %s at shown position %v of %v", r.CellID, r.OptionID, r.ShownPosition, shown)
		}
		// The simulator writes an option as shown ("1. Level 5"): the shown label 1, the canonical option 5.
		if r.Status == store.StatusOK && !strings.Contains(r.Raw, "Level "+r.OptionID) {
			t.Errorf("cell %s: answer %q recorded as option %s", r.CellID, r.Raw, r.OptionID)
		}
		answered += boolToInt(r.Status == store.StatusOK)
	}
	if answered == 0 {
		t.Fatal("no reversed cell was answered")
	}
	if reversed != rp.Summary.Cells {
		t.Fatalf("%d reversed rows, want %d", reversed, rp.Summary.Cells)
	}
	again := s.run(t, "balanced-cached", balanced)
	if again.Summary.Cached != again.Summary.Cells {
		t.Fatalf("rerun %+v: want every cell from the cache", again.Summary)
	}
	for id, cols := range rowsByCell(t, again.OutputDir) {
		if !slices.Equal(cols, paid[id]) {
			t.Errorf("cell %s from the cache differs from the run that paid for it:\n got %q\nwant %q", id, cols, paid[id])
		}
	}
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
