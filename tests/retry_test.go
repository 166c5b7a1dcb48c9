package tests

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workflows"
)

// TestRetryFailedAsksOnlyTheFailedCells runs a grid in which some cells fail for good, then a retry execution of
// the same run: it must request exactly the failed cells, answer them, and leave the other records as they were;
// a retried cell's attempts and tries add its second request and try to the first. The balanced grid (each cell
// also asked with its options reversed, ids /rev) retries the same way.
func TestRetryFailedAsksOnlyTheFailedCells(t *testing.T) {
	t.Run("plain", func(t *testing.T) { retryFailedAsksOnlyTheFailedCells(t, 1) })
	t.Run("balanced", func(t *testing.T) { retryFailedAsksOnlyTheFailedCells(t, 2) })
}

// retryFailedAsksOnlyTheFailedCells is TestRetryFailedAsksOnlyTheFailedCells with orders option orders per cell
// (1: as written, 2: balanced).
func retryFailedAsksOnlyTheFailedCells(t *testing.T, orders int) {
	var failing atomic.Bool
	failing.Store(true)
	var mu = make(chan struct{}, 1)
	var requested []string
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cell := r.Header.Get(sim.CellHeader)
			mu <- struct{}{}
			requested = append(requested, cell)
			<-mu
			// Items 2 and 5 are refused as a bad request: a permanent failure recorded on the cell.
			if failing.Load() && (strings.Contains(cell, "/2/") || strings.Contains(cell, "/5/")) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":{"message":"content filtered","type":"invalid_request_error"}}`))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	s := newStackWrapped(t, sim.Config{}, 1, wrap)
	spec := gridSpec(1, 2, 6, 3) // 36 cells × orders, a third of them on items 2 and 5
	if orders == 2 {
		spec.Questionnaire.Order = &experiment.OrderSettings{Mode: experiment.OrderBalanced}
	}
	cells, failed := 36*orders, 12*orders
	first := s.run(t, "retry-run", spec)
	if first.Summary.Failed != failed {
		t.Fatalf("first run: %d failed, want %d", first.Summary.Failed, failed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := map[int]store.Record{}
	if err := s.store.Scan(ctx, "retry-run", func(r store.Record) error { before[r.Index] = r; return nil }); err != nil {
		t.Fatal(err)
	}

	failing.Store(false)
	mu <- struct{}{}
	requested = nil
	<-mu
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "retry-run", TaskQueue: wire.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE},
		workflows.ExperimentWorkflow, wire.Input{RunID: "retry-run", RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.Failed != 0 || res.Summary.OK+res.Summary.Unparsed != cells {
		t.Errorf("after the retry: %+v, want every cell answered", res.Summary)
	}
	mu <- struct{}{}
	again := append([]string(nil), requested...)
	<-mu
	if len(again) != failed {
		t.Errorf("the retry sent %d requests, want the %d failed cells: %v", len(again), failed, again)
	}
	for _, c := range again {
		if !strings.Contains(c, "/2/") && !strings.Contains(c, "/5/") {
			t.Errorf("the retry asked cell %s, which had not failed", c)
		}
	}
	if err := s.store.Scan(ctx, "retry-run", func(r store.Record) error {
		b := before[r.Index]
		if b.Status != store.StatusFailed && !reflect.DeepEqual(b, r) {
			t.Errorf("cell %d changed by the retry: %+v, was %+v", r.Index, r, b)
		}
		// A retried cell keeps the first execution's request and try (the 400) and adds the answer's.
		if b.Status == store.StatusFailed && (b.Attempts != 1 || b.Tries != 1 || r.Attempts != 2 || r.Tries != 2) {
			t.Errorf("cell %d: attempts %d, tries %d after the retry (%d, %d before); want 2 and 2 (1 and 1 before)",
				r.Index, r.Attempts, r.Tries, b.Attempts, b.Tries)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
