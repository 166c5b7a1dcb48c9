package compare

import (
	"cmp"
	"embed"
	"encoding/csv"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/silicolab/silico/report"
)

// File names of a comparison's outputs.
const (
	CSVFile  = "compare.csv"
	HTMLFile = "compare.html"
)

// column is one column of compare.csv: its name and how a row writes it.
type column struct {
	name string
	val  func(*Row) string
}

func num(f func(*Row) *float64) func(*Row) string {
	return func(r *Row) string { return formatFloat(f(r)) }
}

func count(f func(*Row) int) func(*Row) string {
	return func(r *Row) string { return strconv.Itoa(f(r)) }
}

// flag writes true or false, empty for unknown.
func flag(f func(*Row) *bool) func(*Row) string {
	return func(r *Row) string {
		if v := f(r); v != nil {
			return strconv.FormatBool(*v)
		}
		return ""
	}
}

// columns are compare.csv's columns, in order.
var columns = []column{
	{"model", func(r *Row) string { return r.Model }},
	{"model_b", func(r *Row) string { return r.ModelB }},
	{"item", func(r *Row) string { return r.Item }},
	{"scope", func(r *Row) string { return r.Scope }},
	{"matched_on", func(r *Row) string { return strings.Join(r.MatchedOn, " ") }},
	{"matched", count(func(r *Row) int { return r.Matched })},
	{"only_a", count(func(r *Row) int { return r.OnlyA })},
	{"only_b", count(func(r *Row) int { return r.OnlyB })},
	{"distributions", count(func(r *Row) int { return r.Distributions })},
	{"items", count(func(r *Row) int { return r.Items })},
	{"w1", num(func(r *Row) *float64 { return r.W1 })},
	{"jsd", num(func(r *Row) *float64 { return r.JSD })},
	{"scored", count(func(r *Row) int { return r.Scored })},
	{"personas", count(func(r *Row) int { return r.Personas })},
	{"mean_a", num(func(r *Row) *float64 { return r.MeanA })},
	{"mean_b", num(func(r *Row) *float64 { return r.MeanB })},
	{"shift", num(func(r *Row) *float64 { return r.Shift })},
	{"shift_lo", num(func(r *Row) *float64 { return r.ShiftLo })},
	{"shift_hi", num(func(r *Row) *float64 { return r.ShiftHi })},
	{"icc", num(func(r *Row) *float64 { return r.ICC })},
	{"answered", count(func(r *Row) int { return r.Answered })},
	{"agree", count(func(r *Row) int { return r.Agree })},
	{"agreement", num(func(r *Row) *float64 { return r.Agreement })},
	{"kappa", num(func(r *Row) *float64 { return r.Kappa })},
	{"seeds", func(r *Row) string { return r.seeds }},
	{"served_model_a", func(r *Row) string { return r.ServedA }},
	{"served_model_b", func(r *Row) string { return r.ServedB }},
	{"served_changed", flag(func(r *Row) *bool { return r.ServedChanged })},
	{"system_fingerprint_a", func(r *Row) string { return r.FingerprintA }},
	{"system_fingerprint_b", func(r *Row) string { return r.FingerprintB }},
	{"fingerprint_changed", flag(func(r *Row) *bool { return r.FingerprintChanged })},
}

// Header is compare.csv's header.
func Header() []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = c.name
	}
	return out
}

// Values are row r's fields in Header order: numbers in the shortest form that reads back exactly, empty where
// undefined.
func (r Row) Values() []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = c.val(&r)
	}
	return out
}

func formatFloat(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// WriteCSV writes c as compare.csv to w.
func WriteCSV(w io.Writer, c *Comparison) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Header()); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	for _, r := range c.Rows {
		if err := cw.Write(r.Values()); err != nil {
			return fmt.Errorf("compare: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}

// restByID says how the factors other than models and seeds pair, after the Pairing in the summary and the page.
const restByID = "items, personas, wordings and prompts by id, probes and shown option orders as they are " +
	"(a cell meets the one that asked the same question the same way)"

// Largest is how many items the summary and the page name as the largest shifts of a model.
const Largest = 3

// largestShifts are the item rows of the model pair labelled m with the largest |shift|, at most n, largest
// first (ties in item order).
func (c *Comparison) largestShifts(m string, n int) []Row {
	var rows []Row
	for _, r := range c.Rows {
		if r.Label() == m && r.Scope == ScopeItem && r.Shift != nil {
			rows = append(rows, r)
		}
	}
	slices.SortStableFunc(rows, func(a, b Row) int { return cmp.Compare(math.Abs(*b.Shift), math.Abs(*a.Shift)) })
	return rows[:min(n, len(rows))]
}

// modelRows are the rows over all items, one per model.
func (c *Comparison) modelRows() []Row {
	var out []Row
	for _, r := range c.Rows {
		if r.Scope == ScopeModel {
			out = append(out, r)
		}
	}
	return out
}

// WriteSummary writes a few lines per model: counts, agreement, κ, ICC, the mean shift and the items that
// shifted most.
func WriteSummary(w io.Writer, c *Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (A) vs %s (B)\n", c.A, c.B)
	fmt.Fprintf(&b, "  cells paired: %s; %s\n", c.Pairing, restByID)
	if c.Options.Samples == 0 {
		b.WriteString("  no bootstrap intervals (analysis.bootstrap.samples: 0 in run A's spec)\n")
	}
	for _, r := range c.modelRows() {
		fmt.Fprintf(&b, "  %s: %d matched cells, %d only in A, %d only in B\n", r.Label(), r.Matched, r.OnlyA, r.OnlyB)
		fmt.Fprintf(&b, "    matched on %s\n", strings.Join(r.MatchedOn, ", "))
		fmt.Fprintf(&b, "    agreement %s of %d answered · κ %s · ICC(2,1) %s · mean W1 %s · mean JSD %s\n",
			short(r.Agreement), r.Answered, short(r.Kappa), short(r.ICC), short(r.W1), short(r.JSD))
		fmt.Fprintf(&b, "    shift B − A %s%s over %d scored cells\n", signed(r.Shift), interval(r), r.Scored)
		if r.ServedA != "" || r.ServedB != "" {
			fmt.Fprintf(&b, "    served model A %s · B %s%s\n", orDash(r.ServedA), orDash(r.ServedB), changedNote(r.ServedChanged))
		}
		if r.FingerprintA != "" || r.FingerprintB != "" {
			fmt.Fprintf(&b, "    system fingerprint A %s · B %s%s\n", orDash(r.FingerprintA), orDash(r.FingerprintB), changedNote(r.FingerprintChanged))
		}
		if top := c.largestShifts(r.Label(), Largest); len(top) > 0 {
			parts := make([]string, len(top))
			for i, t := range top {
				parts[i] = t.Item + " " + signed(t.Shift) + interval(t)
			}
			fmt.Fprintf(&b, "    largest shifts: %s\n", strings.Join(parts, ", "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// changedNote marks a provenance line whose values differ between the runs: the drift signal.
func changedNote(c *bool) string {
	if c != nil && *c {
		return " — CHANGED"
	}
	return ""
}

// short writes a statistic with 3 decimals, "—" when undefined.
func short(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

// signed is short with a sign.
func signed(v *float64) string {
	if v == nil {
		return "—"
	}
	s := strconv.FormatFloat(*v, 'f', 3, 64)
	if *v >= 0 {
		s = "+" + s
	}
	return s
}

func interval(r Row) string {
	if r.ShiftLo == nil || r.ShiftHi == nil {
		return ""
	}
	return " [" + short(r.ShiftLo) + ", " + short(r.ShiftHi) + "]"
}

//go:embed compare.html.tmpl
var templates embed.FS

// page is compare.html, parsed beside the report's templates: the same head, style and policy.
var page = template.Must(report.Page(templates, "compare.html.tmpl", template.FuncMap{"signed": signed, "deref": func(b *bool) bool { return *b },
	"join": strings.Join}))

// htmlView is what compare.html shows.
type htmlView struct {
	Title      string
	A, B       SideInfo
	Samples    int
	Seed       int64
	Pairing    string
	Models     []modelView
	Provenance bool
}

// SideInfo names a run on the page.
type SideInfo struct{ ID, Name, Summary string }

type modelView struct {
	All     Row
	Largest []Row
	Items   []Row
}

// WriteHTML writes c as compare.html to w; a and b describe the two runs.
func WriteHTML(w io.Writer, c *Comparison, a, b SideInfo) error {
	v := htmlView{Title: a.Name + " vs " + b.Name, A: a, B: b, Samples: c.Options.Samples, Seed: c.Options.Seed,
		Pairing: c.Pairing.String() + "; " + restByID}
	if a.Name == b.Name {
		v.Title = a.Name + ": two runs"
	}
	for _, all := range c.modelRows() {
		mv := modelView{All: all, Largest: c.largestShifts(all.Label(), Largest)}
		for _, r := range c.Rows {
			if r.Label() == all.Label() && r.Scope == ScopeItem {
				mv.Items = append(mv.Items, r)
			}
			v.Provenance = v.Provenance || r.ServedA != "" || r.ServedB != "" || r.FingerprintA != "" || r.FingerprintB != ""
		}
		v.Models = append(v.Models, mv)
	}
	if err := page.ExecuteTemplate(w, "compare.html.tmpl", v); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}

// WriteFiles writes compare.csv and compare.html to dir (created if needed), each atomically, and returns their
// paths.
func WriteFiles(dir string, c *Comparison, a, b SideInfo) (csvPath, htmlPath string, err error) {
	if csvPath, err = report.WriteAtomic(dir, CSVFile, func(w io.Writer) error { return WriteCSV(w, c) }); err != nil {
		return "", "", err
	}
	if htmlPath, err = report.WriteAtomic(dir, HTMLFile, func(w io.Writer) error { return WriteHTML(w, c, a, b) }); err != nil {
		return "", "", err
	}
	return csvPath, htmlPath, nil
}

// Describe is how the page names a run: its id, its spec's name and summary.
func Describe(s *Side) SideInfo {
	return SideInfo{ID: s.ID, Name: s.Spec.Name, Summary: s.Spec.Summary()}
}
