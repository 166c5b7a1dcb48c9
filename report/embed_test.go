package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// TestEmbedRun: the report of a kind: embed run (texts: items, so no personas) shows its counts and latencies and says
// where the vectors are, instead of failing on a grid it does not have.
func TestEmbedRun(t *testing.T) {
	spec, err := specfile.Load("../examples/embed/experiment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Personas) != 0 {
		t.Fatalf("the example has %d personas; this test wants an embed spec without any", len(spec.Personas))
	}
	n := spec.NumCells()
	var src sliceSource
	for i := range n {
		r := store.Record{Index: i, Status: store.StatusOK, Raw: results.EncodeVector([]float32{1, 0, 0.5}),
			PromptTokens: 7, LatencyMS: 120, Attempts: 1}
		if i == n-1 {
			r = store.Record{Index: i, Status: store.StatusFailed, ErrorClass: "ServerError", ErrorMessage: "boom", Attempts: 2, LatencyMS: 300}
		}
		src = append(src, r)
	}
	run, err := Analyze(context.Background(), src, spec, "embed-run", 0)
	if err != nil {
		t.Fatal(err)
	}
	if run.Summary.Cells != n || run.Summary.OK != n-1 || run.Summary.Failed != 1 || run.Latency.Ran != n {
		t.Errorf("summary %+v, latency ran %d; want %d cells, %d ok, 1 failed, all %d ran", run.Summary, run.Latency.Ran, n, n-1, n)
	}
	var b bytes.Buffer
	if err := Write(&b, run); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	last := spec.Models[len(spec.Models)-1].ID
	for _, want := range []string{`data-key="embed_note"`, "embeddings.parquet", `data-key="vectors/` + last + `/failed">1<`,
		`data-key="cells">` + thousands(n) + `<`, "boom"} {
		if !strings.Contains(page, want) {
			t.Errorf("the embed report lacks %q", want)
		}
	}
	for _, absent := range []string{`id="scales"`, `id="reliability"`, "seeds ", `data-key="unparsed"`} {
		if strings.Contains(page, absent) {
			t.Errorf("the embed report has %q, a section of chat runs", absent)
		}
	}
}
