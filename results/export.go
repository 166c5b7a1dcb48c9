package results

import (
	"bufio"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/silicolab/silico/design"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// Output file names, written into the export directory.
const (
	JSONLFile   = "results.jsonl"
	CSVFile     = "results.csv"
	SummaryFile = "summary.json"
	ScalesFile  = "scales.csv"
	// ReliabilityFile, ItemsFile and AgreementFile hold the psychometrics of Analysis.
	ReliabilityFile = "reliability.csv"
	ItemsFile       = "items.csv"
	AgreementFile   = "agreement.csv"
	// DistributionsFile holds every persona's mean answer distribution per model and item.
	DistributionsFile = "distributions.csv"
	// ReferenceFile and ReferenceScalesFile compare the answers with the spec's human reference; written only
	// when the spec has one.
	ReferenceFile       = "reference.csv"
	ReferenceScalesFile = "reference_scales.csv"
	// ValidityFile holds the checks of a model's personas against the reference's respondents (Validity);
	// written only when the spec has a human reference.
	ValidityFile = "validity.csv"
	// OrderBiasFile holds how the shown position of the options moves the answers (design.OrderBias); written
	// only when some item's options are shown in another order than as written.
	OrderBiasFile = "order_bias.csv"
	// VarianceFile splits each model × scale's score variance over the factors of the grid (design.Variance);
	// written when some item has a scale.
	VarianceFile = "variance.csv"
)

// AnalysisFiles returns the names of the analysis outputs Export writes for spec besides results.jsonl,
// results.csv and summary.json, in the order it writes them.
func AnalysisFiles(spec *experiment.Spec) []string {
	out := []string{ScalesFile, ReliabilityFile, ItemsFile, AgreementFile, DistributionsFile}
	if spec != nil && spec.Reference != nil {
		out = append(out, ReferenceFile, ReferenceScalesFile, ValidityFile)
	}
	if VariesOrder(spec) {
		out = append(out, OrderBiasFile)
	}
	if writesVariance(spec) {
		out = append(out, VarianceFile)
	}
	if writesModes(spec) {
		out = append(out, ModesFile)
	}
	return out
}

// VariesOrder says whether Export writes order_bias.csv for spec (and the report shows option order): when some item's options are shown in
// another order than as written (reversed, balanced or shuffled). A run that never moves an option has no
// order contrast to measure; its shown position is its written one.
func VariesOrder(spec *experiment.Spec) bool {
	if spec == nil {
		return false
	}
	for i := range spec.Questionnaire.Items {
		if spec.OrderFor(i).Mode != experiment.OrderAsWritten {
			return true
		}
	}
	return false
}

// writesVariance says whether Export writes variance.csv for spec: when some item has a scale.
func writesVariance(spec *experiment.Spec) bool {
	if spec == nil {
		return false
	}
	for _, it := range spec.Questionnaire.Items {
		if it.Scale != "" {
			return true
		}
	}
	return false
}

// writesModes says whether Export writes modes.csv for spec: when some model's answer lists two or more modes.
func writesModes(spec *experiment.Spec) bool {
	if spec == nil {
		return false
	}
	for _, m := range spec.Models {
		if len(spec.AnswerFor(m).Modes) > 1 {
			return true
		}
	}
	return false
}

// OutputFiles returns the names of every file Export writes for spec, summary.json last.
func OutputFiles(spec *experiment.Spec) []string {
	return slices.Concat([]string{JSONLFile, CSVFile}, AnalysisFiles(spec), []string{SummaryFile})
}

// maxErrors is how many distinct errors a Summary lists.
const maxErrors = 5

// Source reads the records of a run in index order; every store.Store (SQLite or PostgreSQL) is one.
type Source interface {
	Scan(ctx context.Context, run string, fn func(store.Record) error) error
}

// Export writes the outputs of a run into dir (created if needed): results.jsonl and results.csv with one row
// per cell of spec in submission order, scales.csv (see ScaleScores), reliability.csv, items.csv,
// agreement.csv and distributions.csv (see Analysis), reference.csv and reference_scales.csv when the spec has a
// human reference, order_bias.csv, variance.csv and modes.csv when the spec calls for them (AnalysisFiles), and
// summary.json. A cell with no record is written as failed with error class
// NotRun. Records are streamed from src, never all held in memory, and the analysis keeps nothing per cell: its
// sums and counts are per (model, item, persona), per (model, persona, seed, scale), or per (model, seed) block.
//
// Each file is written to a temporary file in dir and renamed into place only when all of them are complete,
// summary.json last: on error no partial output is left and earlier outputs in dir are untouched.
func Export(ctx context.Context, src Source, spec *experiment.Spec, runID, dir string, elapsed time.Duration) (wire.Summary, error) {
	if spec == nil {
		return wire.Summary{}, errors.New("results: export: nil spec")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %w", err)
	}
	out := &outputSet{dir: dir}
	defer out.abort()
	create := out.create
	jf, err := create(JSONLFile)
	if err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %w", err)
	}
	cf, err := create(CSVFile)
	if err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %w", err)
	}
	sf, err := create(ScalesFile)
	if err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %w", err)
	}
	side := map[string]*atomicFile{}
	for _, name := range AnalysisFiles(spec)[1:] {
		if side[name], err = create(name); err != nil {
			return wire.Summary{}, fmt.Errorf("results: export: %w", err)
		}
	}
	mf, err := create(SummaryFile)
	if err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %w", err)
	}

	cw := csv.NewWriter(cf.w)
	probCols := probColumns(spec)
	if err := cw.Write(HeaderFor(spec)); err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %s: %w", CSVFile, err)
	}
	an := newAnalyzer(spec, runID, elapsed, true)
	dz := an.design
	var line []byte // one results.jsonl line, its buffer reused from row to row
	emit := func(r store.Record) error {
		row := BuildRow(spec, runID, r)
		var err error
		if line, err = row.appendJSON(line[:0]); err != nil {
			return fmt.Errorf("%s: cell %d: %w", JSONLFile, r.Index, err)
		}
		line = append(line, '\n')
		if _, err := jf.w.Write(line); err != nil {
			return fmt.Errorf("%s: %w", JSONLFile, err)
		}
		if err := cw.Write(row.ValuesFor(probCols)); err != nil {
			return fmt.Errorf("%s: %w", CSVFile, err)
		}
		return an.add(&row)
	}
	if err := walk(ctx, src, spec, runID, emit); err != nil {
		return wire.Summary{}, fmt.Errorf("results: export %s: %w", runID, err)
	}
	if cw.Flush(); cw.Error() != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %s: %w", CSVFile, cw.Error())
	}
	a := an.finish(false)
	if err := writeScales(sf.w, runID, an.scales.all(spec)); err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %s: %w", ScalesFile, err)
	}
	writers := map[string]func(io.Writer) error{
		ReliabilityFile:   func(w io.Writer) error { return writeReliability(w, runID, a.Reliability) },
		ItemsFile:         func(w io.Writer) error { return writeItems(w, runID, a.Items) },
		AgreementFile:     func(w io.Writer) error { return writeAgreement(w, runID, a.Agreement) },
		DistributionsFile: func(w io.Writer) error { return writeDistributions(w, runID, a.Distributions()) },
		ReferenceFile:     func(w io.Writer) error { return writeReference(w, runID, a.Reference) },
		ReferenceScalesFile: func(w io.Writer) error {
			return writeReferenceScales(w, runID, slices.Concat(a.ReferenceScales, a.ReferenceOverall))
		},
		ValidityFile:  func(w io.Writer) error { return writeValidity(w, runID, a.Validity) },
		OrderBiasFile: func(w io.Writer) error { return design.WriteOrderBias(w, runID, a.OrderBias) },
		VarianceFile: func(w io.Writer) error {
			rows, err := dz.design.Variance()
			if err != nil {
				return err
			}
			return design.WriteVariance(w, runID, rows)
		},
		ModesFile: func(w io.Writer) error { return WriteModes(w, runID, CompareModes(spec, dz.modes.Dists())) },
	}
	for name, f := range side {
		if err := writers[name](f.w); err != nil {
			return wire.Summary{}, fmt.Errorf("results: export: %s: %w", name, err)
		}
	}
	s := a.Summary
	if err := writeSummary(mf, s); err != nil {
		return wire.Summary{}, err
	}
	if err := out.commit(); err != nil {
		return wire.Summary{}, err
	}
	return s, nil
}

// outputSet is the files of one export, each written under a temporary name: commit puts them all in place,
// in the order they were created (summary.json last: its presence means the export completed); abort removes
// what commit did not place.
type outputSet struct {
	dir   string
	files []*atomicFile
}

func (o *outputSet) create(name string) (*atomicFile, error) {
	f, err := createAtomic(o.dir, name)
	if err != nil {
		return nil, err
	}
	o.files = append(o.files, f)
	return f, nil
}

func (o *outputSet) commit() error {
	for _, f := range o.files {
		if err := f.finish(); err != nil {
			return fmt.Errorf("results: export: %w", err)
		}
	}
	for _, f := range o.files {
		if err := f.rename(); err != nil {
			return fmt.Errorf("results: export: %w", err)
		}
	}
	o.files = nil
	syncDir(o.dir)
	return nil
}

func (o *outputSet) abort() {
	for _, f := range o.files {
		f.abort()
	}
}

// writeSummary writes s as summary.json into f.
func writeSummary(f *atomicFile, s wire.Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("results: export: %s: %w", SummaryFile, err)
	}
	if _, err := f.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("results: export: %s: %w", SummaryFile, err)
	}
	return nil
}

// ExportFor is the export of spec's kind: Export, or ExportEmbed for an embed spec.
func ExportFor(spec *experiment.Spec) func(ctx context.Context, src Source, spec *experiment.Spec, runID, dir string, elapsed time.Duration) (wire.Summary, error) {
	if spec != nil && spec.IsEmbed() {
		return ExportEmbed
	}
	return Export
}

// walk calls emit for every cell of spec in index order: the cell's record from src, or a NotRun record when
// src has none.
func walk(ctx context.Context, src Source, spec *experiment.Spec, runID string, emit func(store.Record) error) error {
	n, next := spec.NumCells(), 0
	put := func(r store.Record) error {
		if next%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		next++
		return emit(r)
	}
	fill := func(end int) error {
		for next < end {
			if err := put(notRun(next)); err != nil {
				return err
			}
		}
		return nil
	}
	err := src.Scan(ctx, runID, func(r store.Record) error {
		switch {
		case r.Index >= n:
			return fmt.Errorf("record of cell %d, but the spec has %d cells: is this the run's spec?", r.Index, n)
		case r.Index < next:
			return fmt.Errorf("record of cell %d after cell %d: the source must give records once each, by index", r.Index, next-1)
		}
		if err := fill(r.Index); err != nil {
			return err
		}
		return put(r)
	})
	if err != nil {
		return err
	}
	return fill(n)
}

// summarizer accumulates a Summary row by row, in submission order.
type summarizer struct {
	s      wire.Summary
	models map[string]int // model id → index in s.Models
	seen   map[string]bool
	// syncPrice is, for the models in batch mode that have a price, the price of their calls made synchronously.
	syncPrice map[int]experiment.Price
	spec      *experiment.Spec
	// served counts the answered cells by model, served model and fingerprint (wire.ModelSummary.Served).
	served map[servedKey]int
	// coverage sums the coverage of each model's answered logprob cells (wire.ModelSummary.Coverage).
	coverage []float64
}

func newSummarizer(spec *experiment.Spec, runID string, elapsed time.Duration) *summarizer {
	z := &summarizer{
		spec: spec,
		s: wire.Summary{RunID: runID, Name: spec.Name, ElapsedSeconds: round(elapsed.Seconds(), 3),
			Errors: []string{}, Models: make([]wire.ModelSummary, len(spec.Models))},
		models:   make(map[string]int, len(spec.Models)),
		seen:     make(map[string]bool),
		coverage: make([]float64, len(spec.Models)),
	}
	if !spec.IsEmbed() {
		z.s.Outputs = OutputFiles(spec)
	}
	for i, m := range spec.Models {
		z.s.Models[i].Model = m.ID
		z.models[m.ID] = i
		if p, ok := llm.PriceFor(m); ok && spec.Batched(m) {
			if z.syncPrice == nil {
				z.syncPrice = map[int]experiment.Price{}
			}
			z.syncPrice[i] = p
		}
	}
	return z
}

func (z *summarizer) add(r *Row) {
	mi := z.models[r.Model]
	m := &z.s.Models[mi]
	u := store.Record{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, CostUSD: r.CostUSD, Cached: r.Cached}.Usage()
	if p, ok := z.syncPrice[mi]; ok && !r.Cached {
		// A cell sent synchronously after its batches (on_expired: sync) cost the full price and saved nothing.
		saved := max(0, llm.Cost(p, r.PromptTokens, r.CompletionTokens)-r.CostUSD)
		m.BatchSavedUSD += saved
		z.s.BatchSavedUSD += saved
	}
	for _, c := range []struct {
		cells, ok, unparsed, failed, cached, length, filtered *int
		usage                                                 *usage.Usage
	}{
		{&z.s.Cells, &z.s.OK, &z.s.Unparsed, &z.s.Failed, &z.s.Cached, &z.s.Length, &z.s.ContentFiltered, &z.s.Usage},
		{&m.Cells, &m.OK, &m.Unparsed, &m.Failed, &m.Cached, &m.Length, &m.ContentFiltered, &m.Usage},
	} {
		*c.cells++
		if r.Cached {
			*c.cached++
		}
		switch r.FinishReason {
		case llm.FinishLength:
			*c.length++
		case llm.FinishContentFilter:
			*c.filtered++
		}
		switch r.Status {
		case store.StatusOK:
			*c.ok++
		case store.StatusUnparsed:
			*c.unparsed++
		default:
			*c.failed++
		}
		c.usage.Add(u)
	}
	if r.ProbsSource == experiment.ProbsFromLogprobs && r.Status != store.StatusFailed && r.ErrorClass != errclass.ContentFiltered {
		// An answer whose label token was not found, or spelt no label shown, has no distribution: none of its
		// mass was on the labels.
		m.CoverageCells++
		if r.Coverage != nil {
			z.coverage[mi] += *r.Coverage
		}
	}
	if r.ServedModel != "" || r.SystemFingerprint != "" {
		k := servedKey{mi, r.ServedModel, r.SystemFingerprint}
		if z.served == nil {
			z.served = map[servedKey]int{}
		}
		z.served[k]++
	}
	if r.ErrorClass != "" && len(z.s.Errors) < maxErrors {
		e := r.ErrorClass + ": " + r.ErrorMessage
		if !z.seen[e] {
			z.seen[e] = true
			z.s.Errors = append(z.s.Errors, e)
		}
	}
}

// summary returns the Summary. Its costs are the exact sums of the rows' (usage.USD adds exactly), so the
// cost_usd column of results.csv adds up to its cost_usd to the last digit.
func (z *summarizer) summary() wire.Summary {
	s := z.s
	s.Models = append([]wire.ModelSummary(nil), z.s.Models...)
	for k, n := range z.served {
		m := &s.Models[k.model]
		m.Served = append(m.Served, wire.Served{ServedModel: k.served, SystemFingerprint: k.fingerprint, Cells: n})
	}
	s.Warnings = nil
	for i := range s.Models {
		m := &s.Models[i]
		slices.SortFunc(m.Served, func(a, b wire.Served) int {
			return cmp.Or(cmp.Compare(b.Cells, a.Cells), cmp.Compare(a.ServedModel, b.ServedModel),
				cmp.Compare(a.SystemFingerprint, b.SystemFingerprint))
		})
		if w := wire.ServedWarning(*m); w != "" {
			s.Warnings = append(s.Warnings, w)
		}
		if m.CoverageCells > 0 {
			c := z.coverage[i] / float64(m.CoverageCells)
			m.Coverage = &c
		}
		if w := wire.CoverageWarning(*m); w != "" {
			s.Warnings = append(s.Warnings, w)
		}
	}
	for _, m := range z.spec.Models {
		if w := z.spec.GreedySeeds(m); w != "" {
			s.Warnings = append(s.Warnings, w)
		}
	}
	return s
}

// servedKey is a model's cells' served model and fingerprint, which the summary counts.
type servedKey struct {
	model               int
	served, fingerprint string
}

// round rounds v to d decimals. The result prints (shortest form) as exactly d decimals or fewer.
func round(v float64, d int) float64 {
	p := math.Pow10(d)
	return math.Round(v*p) / p
}

// atomicFile is an output written under a temporary name and renamed into place when complete.
type atomicFile struct {
	f     *os.File
	w     *bufio.Writer
	final string
	done  bool // renamed into place
}

func createAtomic(dir, name string) (*atomicFile, error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	return &atomicFile{f: f, w: bufio.NewWriterSize(f, 256<<10), final: filepath.Join(dir, name)}, nil
}

// finish flushes, syncs and closes the temporary file.
func (a *atomicFile) finish() error {
	if err := a.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", a.final, err)
	}
	if err := a.f.Chmod(0o644); err != nil {
		return fmt.Errorf("chmod %s: %w", a.final, err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", a.final, err)
	}
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", a.final, err)
	}
	return nil
}

func (a *atomicFile) rename() error {
	if err := os.Rename(a.f.Name(), a.final); err != nil {
		return fmt.Errorf("rename into %s: %w", a.final, err)
	}
	a.done = true
	return nil
}

// abort removes the temporary file unless it was renamed into place.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	_ = a.f.Close()
	_ = os.Remove(a.f.Name())
}

// syncDir makes the renames in dir durable where the platform allows; failure only weakens durability.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
