package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestRunsListNewestFirstWithTheirState(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		if runs, err := s.Runs(ctx); err != nil || len(runs) != 0 {
			t.Fatalf("Runs of an empty store = %v, %v; want none", runs, err)
		}
		for _, id := range []string{"old", "mid", "new"} {
			if err := s.SaveRun(ctx, id, []byte(`{}`)); err != nil {
				t.Fatalf("SaveRun %s: %v", id, err)
			}
			time.Sleep(5 * time.Millisecond) // created is kept to the millisecond: the order must be by it
		}
		at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
		if err := s.SetRunState(ctx, "mid", RunRunning, at); err != nil {
			t.Fatalf("SetRunState: %v", err)
		}
		if err := s.SetRunState(ctx, "mid", RunCancelled, at.Add(time.Minute)); err != nil {
			t.Fatalf("SetRunState again: %v", err)
		}
		if err := s.SetElapsed(ctx, "new", 1500*time.Millisecond); err != nil {
			t.Fatalf("SetElapsed: %v", err)
		}
		runs, err := s.Runs(ctx)
		if err != nil {
			t.Fatalf("Runs: %v", err)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		if !slices.Equal(ids, []string{"new", "mid", "old"}) {
			t.Fatalf("Runs order = %v; want newest first", ids)
		}
		if r := runs[1]; r.State != RunCancelled || !r.StateAt.Equal(at.Add(time.Minute)) || r.HasElapsed {
			t.Errorf("mid = %+v; want the last state recorded, cancelled at %v, no elapsed", r, at.Add(time.Minute))
		}
		if r := runs[0]; r.State != "" || !r.HasElapsed || r.Elapsed != 1500*time.Millisecond || r.Created.IsZero() {
			t.Errorf("new = %+v; want no state, elapsed 1.5s and a creation time", r)
		}
		if err := s.DeleteRun(ctx, "mid"); err != nil {
			t.Fatalf("DeleteRun: %v", err)
		}
		if err := s.SetRunState(ctx, "fresh", RunRunning, at); err != nil {
			t.Fatalf("SetRunState of a run not saved yet: %v", err)
		}
		runs, _ = s.Runs(ctx)
		ids = ids[:0]
		for _, r := range runs {
			ids = append(ids, r.ID+":"+r.State)
		}
		if !slices.Equal(ids, []string{"fresh:running", "new:", "old:"}) {
			t.Fatalf("after DeleteRun and a state of a new run: %v", ids)
		}
	})
}
