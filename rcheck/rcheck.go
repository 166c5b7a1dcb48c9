// Package rcheck runs the R scripts that check a package's statistics against an independent implementation,
// for that package's tests. The test writes the script's inputs and its own figures at full precision into a
// directory (go.csv: case, figure, value; Num formats the values), the script recomputes every figure in R and
// compares (compare.R beside this file: to 1e-9, relative above 1, a figure on one side only being a
// difference), printing "every figure agrees" or the differences by name ("case|figure") and exiting 1.
package rcheck

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Num formats a figure at full precision: the shortest decimal that parses back to the same float64, "NA"
// (R's missing value) for NaN.
func Num(x float64) string {
	if math.IsNaN(x) {
		return "NA"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// Rscript returns the path of Rscript, skipping the test when R is not installed.
func Rscript(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("Rscript")
	if err != nil {
		t.Skip("Rscript not installed (apt-get install r-base-core): the figures are not compared with R")
	}
	return path
}

// run runs script on dir and returns its output and whether it passed.
func run(t testing.TB, rscript, script, dir string) (string, bool) {
	t.Helper()
	out, err := exec.Command(rscript, script, dir).CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatal(err)
	}
	return string(out), err == nil
}

// Check writes the script's inputs and Go's figures into a new directory with write, then runs two subtests:
// "agrees", which fails unless the script finds every figure equal to R's, and "rejects moved figures", which
// moves the figures of moves (see Rejects) and fails unless the script names each. Without Rscript the test
// is skipped.
func Check(t *testing.T, script string, write func(t *testing.T, dir string), moves []Move) {
	t.Helper()
	rs := Rscript(t)
	dir := t.TempDir()
	write(t, dir)
	t.Run("agrees", func(t *testing.T) { agree(t, rs, script, dir) })
	t.Run("rejects moved figures", func(t *testing.T) { Rejects(t, rs, script, dir, moves) })
}

// agree runs script on dir and fails the test unless every figure agrees.
func agree(t testing.TB, rscript, script, dir string) {
	t.Helper()
	out, ok := run(t, rscript, script, dir)
	t.Log(strings.TrimSpace(out))
	if !ok || !strings.Contains(out, "every figure agrees") {
		t.Fatalf("%s disagrees with Go:\n%s", filepath.Base(script), out)
	}
}

// Move is one figure of go.csv to change: its case and figure name. Flip turns a 0/1 flag over; otherwise the
// value moves by 1e-8 (relative above 1).
type Move struct {
	Case, Figure string
	Flip         bool
}

// Rejects moves the figures of dir/go.csv, runs script and fails the test unless the script fails naming each
// moved figure and no other; go.csv is restored afterwards.
func Rejects(t testing.TB, rscript, script, dir string, moves []Move) {
	t.Helper()
	path := filepath.Join(dir, "go.csv")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Error(err)
		}
	}()
	lines := strings.Split(string(raw), "\n")
	for _, m := range moves {
		prefix := m.Case + "," + m.Figure + ","
		found := false
		for i, l := range lines {
			v, err := strconv.ParseFloat(strings.TrimPrefix(l, prefix), 64)
			if !strings.HasPrefix(l, prefix) || err != nil {
				continue
			}
			moved := v + 1e-8*max(1, math.Abs(v))
			if m.Flip {
				moved = 1 - v
			}
			lines[i] = prefix + Num(moved)
			found = true
		}
		if !found {
			t.Fatalf("go.csv has no number for %s %s", m.Case, m.Figure)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, ok := run(t, rscript, script, dir)
	if ok || !strings.Contains(out, fmt.Sprintf("\n%d of ", len(moves))) {
		t.Errorf("%s did not reject exactly the %d moved figures:\n%s", filepath.Base(script), len(moves), out)
	}
	for _, m := range moves {
		if !strings.Contains(out, m.Case+"|"+m.Figure+":") {
			t.Errorf("%s did not name %s|%s:\n%s", filepath.Base(script), m.Case, m.Figure, out)
		}
	}
}

// Files are the files a test writes into one directory for a check script. Every failure to write fails the
// test; Close flushes and closes them all.
type Files struct {
	t      testing.TB
	dir    string
	tables []*Table
	raw    []*os.File
}

// Table is one CSV file of Files.
type Table struct {
	t    testing.TB
	name string
	w    *csv.Writer
}

// NewFiles returns the Files of dir.
func NewFiles(t testing.TB, dir string) *Files { return &Files{t: t, dir: dir} }

// Raw creates the file name and writes its first line; the caller writes the rest (a writer of its own, such
// as bootstrap.WriteIndices, appends to it).
func (fs *Files) Raw(name, firstLine string) *os.File {
	fs.t.Helper()
	f, err := os.Create(filepath.Join(fs.dir, name))
	if err != nil {
		fs.t.Fatal(err)
	}
	fs.raw = append(fs.raw, f)
	if _, err := fmt.Fprintln(f, firstLine); err != nil {
		fs.t.Fatal(err)
	}
	return f
}

// Create creates the CSV file name with the header.
func (fs *Files) Create(name string, header ...string) *Table {
	fs.t.Helper()
	f, err := os.Create(filepath.Join(fs.dir, name))
	if err != nil {
		fs.t.Fatal(err)
	}
	fs.raw = append(fs.raw, f)
	tb := &Table{t: fs.t, name: name, w: csv.NewWriter(f)}
	fs.tables = append(fs.tables, tb)
	tb.Row(header...)
	return tb
}

// Row writes one record.
func (tb *Table) Row(rec ...string) {
	if err := tb.w.Write(rec); err != nil {
		tb.t.Fatalf("%s: %v", tb.name, err)
	}
}

// Close flushes every table and closes every file.
func (fs *Files) Close() {
	fs.t.Helper()
	for _, tb := range fs.tables {
		tb.w.Flush()
		if err := tb.w.Error(); err != nil {
			fs.t.Fatalf("%s: %v", tb.name, err)
		}
	}
	for _, f := range fs.raw {
		if err := f.Close(); err != nil {
			fs.t.Fatal(err)
		}
	}
}
