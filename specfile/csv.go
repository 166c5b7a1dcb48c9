package specfile

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/suggest"
)

// csvTable is a CSV file the spec names: its header and rows, with the line of each row and the column (1-based,
// in bytes) of each field, for errors.
type csvTable struct {
	name       string
	header     []string
	headerCols []int
	rows       [][]string
	lines      []int
	cols       [][]int
}

// readCSV opens a CSV file named by the spec; n is the spec's file node, for errors.
func (d *decoder) readCSV(n *node, path string) (name string, header []string, rows [][]string, lines []int, ok bool) {
	t, ok := d.readCSVTable(n, path)
	if t == nil {
		return "", nil, nil, nil, false
	}
	return t.name, t.header, t.rows, t.lines, ok
}

// readCSVTable reads a CSV file named by the spec, with the position of every field; n is the spec's file node,
// for errors. The table is nil when no file name could be resolved.
func (d *decoder) readCSVTable(n *node, path string) (*csvTable, bool) {
	rel := d.str(n, path)
	if rel == "" {
		d.errAt(n, path, "want the path of a CSV file, relative to the spec")
		return nil, false
	}
	if d.noFiles {
		d.errAt(n, path, "files are not read from a workflow input; inline them with `starter validate --json`")
		return nil, false
	}
	t := &csvTable{name: rel}
	if !filepath.IsAbs(rel) {
		t.name = filepath.Join(d.baseDir, rel)
	}
	data, err := os.ReadFile(t.name)
	if err != nil {
		d.errAt(n, path, "cannot read %s: %s (the path is relative to the spec's directory)", t.name, unwrapPathError(err))
		return t, false
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			e := &experiment.Error{File: t.name, Field: path, Msg: "not valid CSV: " + err.Error()}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				e.Line, e.Column, e.Msg = pe.Line, pe.Column, "not valid CSV: "+pe.Err.Error()
			}
			d.errs = append(d.errs, e)
			return t, false
		}
		line, _ := r.FieldPos(0)
		cols := make([]int, len(rec))
		for i := range rec {
			_, cols[i] = r.FieldPos(i)
		}
		if t.header == nil {
			t.header = make([]string, len(rec))
			for i, h := range rec {
				t.header[i] = strings.TrimSpace(h)
			}
			t.headerCols = cols
			continue
		}
		t.rows = append(t.rows, rec)
		t.lines = append(t.lines, line)
		t.cols = append(t.cols, cols)
	}
	if t.header == nil {
		d.errs = append(d.errs, &experiment.Error{File: t.name, Line: 1, Column: 1, Msg: "empty CSV: want a header row and one row per entry"})
		return t, false
	}
	return t, true
}

// personaCSV reads personas from a CSV with an id column and one column per attribute.
func (d *decoder) personaCSV(n *node, template string) []experiment.Persona {
	name, header, rows, lines, ok := d.readCSV(n, "personas.file")
	if !ok {
		return nil
	}
	idCol := -1
	for i, h := range header {
		if strings.EqualFold(h, "id") {
			idCol = i
		}
	}
	if idCol < 0 {
		d.errs = append(d.errs, &experiment.Error{File: name, Line: 1, Column: 1, Field: "personas.file",
			Msg: fmt.Sprintf("no id column in the header (%s); want an id column and one column per attribute", strings.Join(header, ","))})
		return nil
	}
	var out []experiment.Persona
	for r, row := range rows {
		p := experiment.Persona{Template: template, Attributes: map[string]string{}}
		for i, v := range row {
			if i == idCol {
				p.ID = strings.TrimSpace(v)
			} else {
				p.Attributes[header[i]] = v
			}
		}
		res := index("personas", len(out))
		d.setLoc(res, loc{file: name, path: res, line: lines[r], col: 1})
		d.setLoc(res+".template", loc{file: d.file, path: "personas.template", line: n.line, col: n.col})
		out = append(out, p)
	}
	return out
}

var itemColumns = []string{"id", "text", "scale", "reversed", "keyed", "image"}

// itemCSV reads items from a CSV with columns id, text, scale and reversed (true/false) or keyed (+/-).
func (d *decoder) itemCSV(n *node) []experiment.Item {
	name, header, rows, lines, ok := d.readCSV(n, "questionnaire.items.file")
	if !ok {
		return nil
	}
	col := map[string]int{}
	bad := false
	for i, h := range header {
		h = strings.ToLower(h)
		if !slices.Contains(itemColumns, h) {
			hint := suggest.DidYouMean(h, itemColumns)
			if h == "question" {
				hint = ` (did you mean "text"?)`
			}
			d.errs = append(d.errs, &experiment.Error{File: name, Line: 1, Column: 1, Field: "questionnaire.items.file",
				Msg: fmt.Sprintf("unknown column %q%s; accepted columns: %s", h, hint, strings.Join(itemColumns, ", "))})
			bad = true
			continue
		}
		col[h] = i
	}
	_, hasRev := col["reversed"]
	_, hasKeyed := col["keyed"]
	if hasRev && hasKeyed {
		d.errs = append(d.errs, &experiment.Error{File: name, Line: 1, Column: 1, Field: "questionnaire.items.file",
			Msg: "both reversed and keyed columns; keep one (reversed: true/false, or keyed: +/-)"})
		bad = true
	}
	if _, ok := col["text"]; !ok {
		d.errs = append(d.errs, &experiment.Error{File: name, Line: 1, Column: 1, Field: "questionnaire.items.file",
			Msg: fmt.Sprintf("no text column in the header (%s); want columns id, text, scale and reversed or keyed", strings.Join(header, ","))})
		bad = true
	}
	if bad {
		return nil
	}
	var out []experiment.Item
	for r, row := range rows {
		cell := func(c string) string {
			if i, ok := col[c]; ok {
				return strings.TrimSpace(row[i])
			}
			return ""
		}
		it := experiment.Item{ID: cell("id"), Text: cell("text"), Scale: cell("scale")}
		if it.ID == "" {
			it.ID = strconv.Itoa(r + 1)
		}
		res := index("questionnaire.items", len(out))
		d.setLoc(res, loc{file: name, path: res, line: lines[r], col: 1})
		if hasKeyed {
			switch cell("keyed") {
			case "+", "":
			case "-":
				it.Reversed = true
			default:
				d.errs = append(d.errs, &experiment.Error{File: name, Line: lines[r], Column: col["keyed"] + 1, Field: res + ".keyed",
					Msg: fmt.Sprintf("keyed %q: want + or -", cell("keyed"))})
			}
		}
		if hasRev {
			switch strings.ToLower(cell("reversed")) {
			case "true", "1", "yes":
				it.Reversed = true
			case "false", "0", "no", "":
			default:
				d.errs = append(d.errs, &experiment.Error{File: name, Line: lines[r], Column: col["reversed"] + 1, Field: res + ".reversed",
					Msg: fmt.Sprintf("reversed %q: want true or false", cell("reversed"))})
			}
		}
		if ref := cell("image"); ref != "" { // one picture: a URL or a path relative to the spec
			if u, msg := d.resolveImage(ref); msg != "" {
				d.errs = append(d.errs, &experiment.Error{File: name, Line: lines[r], Column: col["image"] + 1, Field: res + ".image", Msg: msg})
			} else {
				it.Images = []string{u}
			}
		}
		out = append(out, it)
	}
	return out
}

// embedCSV reads the texts of an embed spec from one column of a CSV file, ids from idColumn or the row number.
func (d *decoder) embedCSV(n *node, column, idColumn string) []experiment.EmbedInput {
	const path = "embed.file"
	name, header, rows, lines, ok := d.readCSV(n, path)
	if !ok {
		return nil
	}
	find := func(want, key string) int {
		for i, h := range header {
			if strings.EqualFold(h, want) {
				return i
			}
		}
		d.errs = append(d.errs, &experiment.Error{File: name, Line: 1, Column: 1, Field: "embed." + key,
			Msg: fmt.Sprintf("no column %q in the header%s; columns: %s", want, suggest.DidYouMean(want, header), strings.Join(header, ", "))})
		return -1
	}
	if column == "" {
		d.errAt(n, "embed.column", "missing: name the CSV column that holds the texts (columns: %s)", strings.Join(header, ", "))
		return nil
	}
	textCol, idCol := find(column, "column"), -1
	if idColumn != "" {
		idCol = find(idColumn, "id_column")
	}
	if textCol < 0 || (idColumn != "" && idCol < 0) {
		return nil
	}
	out := make([]experiment.EmbedInput, 0, len(rows))
	for r, row := range rows {
		in := experiment.EmbedInput{ID: experiment.EmbedInputID(r)}
		if textCol < len(row) {
			in.Text = row[textCol]
		}
		if idCol >= 0 && idCol < len(row) {
			in.ID = strings.TrimSpace(row[idCol])
		}
		if strings.TrimSpace(in.Text) == "" {
			d.errs = append(d.errs, &experiment.Error{File: name, Line: lines[r], Column: 1, Field: "embed.column",
				Msg: fmt.Sprintf("row %d has no text in column %q; every row needs a text to embed", r+1, column)})
		}
		res := index("embed.inputs", len(out))
		d.setLoc(res, loc{file: name, path: res, line: lines[r], col: 1})
		out = append(out, in)
	}
	return out
}
