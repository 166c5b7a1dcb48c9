package results

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// Output files of an embed spec.
const (
	// VectorsFile holds one row per (model, text) with its vector (see VectorRow).
	VectorsFile = "embeddings.parquet"
	// VectorIndexFile is the same rows without vectors, with status, tokens, cost and errors, as CSV.
	VectorIndexFile = "embeddings.csv"
)

// MaxSimilarityTexts bounds the texts of a similarity matrix: its size grows with their square (5,000 texts
// make a CSV of about 225 MB per model). A run with more texts writes none; compute them from the vectors.
const MaxSimilarityTexts = 5000

// SimilarityFile is the name of the text × text cosine-similarity matrix of one model.
func SimilarityFile(modelID string) string { return "similarity_" + modelID + ".csv" }

// VectorRow is one row of embeddings.parquet: a text embedded by a model. Vector is list<float32>, empty (and
// Dims 0) when the text has no vector (Status failed; its error is in embeddings.csv).
type VectorRow struct {
	Index  int64     `parquet:"index"`
	Model  string    `parquet:"model"`
	TextID string    `parquet:"text_id"`
	Source string    `parquet:"source"`
	Text   string    `parquet:"text"`
	Status string    `parquet:"status"`
	Dims   int32     `parquet:"dims"`
	Vector []float32 `parquet:"vector,list"`
}

// ReadVectors reads embeddings.parquet.
func ReadVectors(path string) ([]VectorRow, error) {
	rows, err := parquet.ReadFile[VectorRow](path)
	if err != nil {
		return nil, fmt.Errorf("results: read %s: %w", path, err)
	}
	return rows, nil
}

var vectorIndexHeader = []string{"index", "model", "text_id", "source", "status", "dims", "prompt_tokens", "cost_usd",
	"cached", "attempts", "tries", "latency_ms", "error_class", "error_code", "error_message", "text"}

// ExportEmbed writes the outputs of an embed spec's run into dir: embeddings.parquet (vectors), embeddings.csv
// (the index: one row per vector, without it), one similarity_<model>.csv per model (text × text cosine
// similarity, texts in submission order, empty where a vector is missing; only up to MaxSimilarityTexts texts)
// and summary.json. Files are written
// as Export writes them: whole or not at all, summary.json last.
func ExportEmbed(ctx context.Context, src Source, spec *experiment.Spec, runID, dir string, elapsed time.Duration) (wire.Summary, error) {
	if spec == nil || !spec.IsEmbed() {
		return wire.Summary{}, errors.New("results: export embed: not an embed spec")
	}
	texts, err := spec.EmbedTexts()
	if err != nil {
		return wire.Summary{}, fmt.Errorf("results: export embed: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %w", err)
	}
	out := &outputSet{dir: dir}
	defer out.abort()
	create := out.create
	sum := newSummarizer(spec, runID, elapsed)
	rows := make([]VectorRow, 0, spec.NumCells())
	xf, err := create(VectorIndexFile)
	if err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %w", err)
	}
	xw := csv.NewWriter(xf.w)
	if err := xw.Write(vectorIndexHeader); err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %s: %w", VectorIndexFile, err)
	}
	emit := func(r store.Record) error {
		m, t := spec.EmbedCell(r.Index)
		row := VectorRow{Index: int64(r.Index), Model: spec.Models[m].ID, TextID: texts[t].ID, Source: spec.Embed.Texts,
			Text: texts[t].Text, Status: r.Status}
		if r.Status == store.StatusOK {
			v, err := DecodeVector(r.Raw)
			if err != nil {
				return fmt.Errorf("cell %d: %w", r.Index, err)
			}
			row.Vector, row.Dims = v, int32(len(v))
		}
		rows = append(rows, row)
		sum.add(&Row{Model: row.Model, Status: r.Status, PromptTokens: r.PromptTokens, CostUSD: r.CostUSD,
			Cached: r.Cached, ErrorClass: r.ErrorClass, ErrorMessage: r.ErrorMessage})
		return xw.Write([]string{strconv.Itoa(r.Index), row.Model, row.TextID, row.Source, r.Status,
			strconv.Itoa(int(row.Dims)), strconv.Itoa(r.PromptTokens), r.CostUSD.String(),
			strconv.FormatBool(r.Cached), strconv.Itoa(r.Attempts), strconv.Itoa(r.Tries), formatFloat(r.LatencyMS),
			r.ErrorClass, r.ErrorCode, r.ErrorMessage, row.Text})
	}
	if err := walk(ctx, src, spec, runID, emit); err != nil {
		return wire.Summary{}, fmt.Errorf("results: export %s: %w", runID, err)
	}
	if xw.Flush(); xw.Error() != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %s: %w", VectorIndexFile, xw.Error())
	}
	pf, err := create(VectorsFile)
	if err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %w", err)
	}
	pw := parquet.NewGenericWriter[VectorRow](pf.w, parquet.Compression(&parquet.Zstd))
	if _, err := pw.Write(rows); err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %s: %w", VectorsFile, err)
	}
	if err := pw.Close(); err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %s: %w", VectorsFile, err)
	}
	n := len(texts)
	for m, model := range spec.Models {
		if n > MaxSimilarityTexts {
			break
		}
		f, err := create(SimilarityFile(model.ID))
		if err != nil {
			return wire.Summary{}, fmt.Errorf("results: export: %w", err)
		}
		if err := writeSimilarity(f, texts, rows[m*n:(m+1)*n]); err != nil {
			return wire.Summary{}, fmt.Errorf("results: export: %s: %w", SimilarityFile(model.ID), err)
		}
	}
	mf, err := create(SummaryFile)
	if err != nil {
		return wire.Summary{}, fmt.Errorf("results: export: %w", err)
	}
	s := sum.summary()
	s.Kind = experiment.KindEmbed
	if err := writeSummary(mf, s); err != nil {
		return wire.Summary{}, err
	}
	if err := out.commit(); err != nil {
		return wire.Summary{}, err
	}
	return s, nil
}

// writeSimilarity writes the cosine similarity of every pair of one model's texts: a header of text ids, then
// one row per text. A pair with a missing vector is empty.
func writeSimilarity(f *atomicFile, texts []experiment.EmbedText, rows []VectorRow) error {
	w := csv.NewWriter(f.w)
	head := make([]string, 0, len(texts)+1)
	head = append(head, "text_id")
	for _, t := range texts {
		head = append(head, t.ID)
	}
	if err := w.Write(head); err != nil {
		return err
	}
	norms := make([]float64, len(rows))
	for i, r := range rows {
		norms[i] = math.Sqrt(dot(r.Vector, r.Vector))
	}
	line := make([]string, len(rows)+1)
	for i, a := range rows {
		line[0] = texts[i].ID
		for j, b := range rows {
			line[j+1] = ""
			if len(a.Vector) > 0 && len(a.Vector) == len(b.Vector) && norms[i] > 0 && norms[j] > 0 {
				line[j+1] = formatFloat(dot(a.Vector, b.Vector) / (norms[i] * norms[j]))
			}
		}
		if err := w.Write(line); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
