package specfile

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/silicolab/silico/experiment"
)

// Load reads the spec file at path (YAML or JSON, this project's format or the seed-000 framework's JSON) and
// returns it resolved, defaulted and validated. Files it names (persona and item CSVs) are read relative to the
// spec's directory. Every mistake is reported at once as Errors with file, line and field.
func Load(path string) (*experiment.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, experiment.Errors{{File: path, Msg: "cannot read the spec: " + unwrapPathError(err)}}
	}
	return Parse(data, path, filepath.Dir(path))
}

// unwrapPathError is the reason of a file error without the path, which the error names already.
func unwrapPathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse reads a spec from data; filename names it in errors, baseDir resolves the files it names. It accepts this
// project's format (the JSON form of Spec plus conveniences: option maps, CSV personas and items, default prompt
// and seeds) and the seed-000 framework's JSON (detected by prompt_template, demographic_profiles or parameters).
// The result is resolved, defaulted and validated: parse → resolve → ApplyDefaults → Validate.
//
// A file that leaves out a key of fileDefaults gets that default (run.seed_per_cell: true, a seed per cell, see
// experiment.Spec.CallSeed), named in the spec's Defaulted. Such a default is a spec file's only, not
// ApplyDefaults': a spec that arrives as a workflow input or is read back from a store (ParseInput, ParseSaved)
// without the key was resolved before the setting existed, and keeps what it was run with.
func Parse(data []byte, filename, baseDir string) (*experiment.Spec, error) {
	s, err := parse(data, &decoder{file: filename, baseDir: baseDir}, nil)
	if err != nil {
		return nil, err
	}
	for _, d := range fileDefaults() {
		if d.missing(s) {
			d.set(s, true)
			s.Defaulted = append(s.Defaulted, d.key)
		}
	}
	return s, nil
}

// fileDefault is a default that a spec file gets and that a spec resolved by a release before it lacks.
type fileDefault struct {
	// key is the default's key, as a spec names it.
	key string
	// missing reports whether a spec does not set the key.
	missing func(*experiment.Spec) bool
	// set gives a spec the file's default (on), or takes the key out again, as an earlier release resolved it.
	set func(s *experiment.Spec, on bool)
}

// fileDefaults are the spec files' own defaults, oldest first. A release that adds one appends it here, so that
// the run an earlier release started for the same file is still found (Earlier), and a run keeps its identity
// across the upgrade: the new default applies to new runs only.
func fileDefaults() []fileDefault {
	return []fileDefault{{
		key:     "run.seed_per_cell",
		missing: func(s *experiment.Spec) bool { return s.Run.SeedPerCell == nil },
		set: func(s *experiment.Spec, on bool) {
			s.Run.SeedPerCell = nil
			if on {
				perCell := true
				s.Run.SeedPerCell = &perCell
			}
		},
	}}
}

// Earlier returns spec, a spec file as Parse resolved it, as each earlier release resolved the same file: a
// copy without the newest of the defaults the file left out (spec.Defaulted), then without the two newest, and
// so on, newest release first. The run an earlier release started for the file has the run id of one of them,
// and goes on with the spec it was started with. keys[i] names the defaults the i-th copy leaves out. A spec that
// got no such default has no earlier form.
func Earlier(spec *experiment.Spec) (forms []*experiment.Spec, keys [][]string, err error) {
	byKey := map[string]fileDefault{}
	for _, d := range fileDefaults() {
		byKey[d.key] = d
	}
	var out []string
	for i := len(spec.Defaulted) - 1; i >= 0; i-- {
		d, ok := byKey[spec.Defaulted[i]]
		if !ok {
			continue
		}
		c, _, err := spec.Canonical()
		if err != nil {
			return nil, nil, err
		}
		out = append(out, d.key)
		for _, k := range out {
			byKey[k].set(c, false)
		}
		forms = append(forms, c)
		keys = append(keys, slices.Clone(out))
	}
	return forms, keys, nil
}

// ParseInput reads a spec that arrived as a workflow input: exactly as Parse reads a file (the same keys, the
// same errors, the same defaults), except that the top-level keys in control are not the spec's and are
// skipped, and no file is read (a worker must not read files named by whoever started a run: inline them with
// `starter validate --json`).
func ParseInput(data []byte, name string, control ...string) (*experiment.Spec, error) {
	return parse(data, &decoder{file: name, noFiles: true}, control)
}

// ParseSaved reads back the spec saved in a results store for run (the bytes store.Store.LoadRun returns: the
// JSON of a resolved spec, which the spec format accepts as it is). Every reader of a saved spec (a worker, the
// starter's commands) goes through it: the decoder every spec goes through, so each holds the same Spec as the
// one that saved it, defaults filled and templates compiled once by Validate.
func ParseSaved(saved []byte, run string) (*experiment.Spec, error) {
	s, err := ParseInput(saved, "saved spec of run "+run)
	if err != nil {
		return nil, fmt.Errorf("spec of run %s: %w", run, err)
	}
	return s, nil
}

// parse decodes data with d. A decoder without locs records no positions of resolved fields: a spec that
// validates never needs them, and for an item bank of 100,000 items they are half a million map entries. When
// Validate finds mistakes, data is decoded again with a decoder that records them, to place every mistake.
func parse(data []byte, d *decoder, control []string) (*experiment.Spec, error) {
	if msg := notText(data); msg != "" {
		// Nothing of a binary file is shown: its bytes would only garble the terminal.
		return nil, experiment.Errors{{File: d.file, Msg: msg}}
	}
	s, err := parseWith(data, d, control)
	if d.locs == nil && d.unplaced {
		again := &decoder{file: d.file, baseDir: d.baseDir, noFiles: d.noFiles, locs: map[string]loc{}}
		return parseWith(data, again, control)
	}
	return s, err
}

func parseWith(data []byte, d *decoder, control []string) (*experiment.Spec, error) {
	filename := d.file
	root, perr := parseNodes(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), filename)
	if perr != nil {
		return nil, experiment.Errors{perr}
	}
	d.aliased = root.aliased
	s := &experiment.Spec{}
	if root.kind != kindMap {
		d.errAt(root, "", "want a mapping with name, models, personas, questionnaire, ..., got %s", root.describe())
		return nil, d.errs
	}
	root.drop(control)
	if isFramework(root) {
		d.framework(root, s)
	} else {
		specKeys.into(d, root, "", s)
	}
	if d.referenceNode != nil {
		d.referenceFile(s, d.referenceNode)
	}
	// The tree is not needed after decoding (the Spec shares its strings): let it go before validating.
	noName, top := root.get("name") == nil, &node{line: root.line, col: root.col}
	d.referenceNode = nil
	if s.Name == "" && noName && filename != "" {
		base := filepath.Base(filename)
		s.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	s.ApplyDefaults()
	var verrs experiment.Errors
	if err := s.Validate(); err != nil {
		verrs = err.(experiment.Errors)
		d.unplaced = d.locs == nil
	}
	errs := d.errs
	for _, e := range verrs {
		d.place(e, top)
		if !coveredBy(e.Field, d.errs) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		sortByPosition(errs)
		return nil, errs
	}
	s.Notes = d.notes
	return s, nil
}

// textSniff is how much of the start of a spec tells a text file from a binary one.
const textSniff = 1024

// notText says why data is not a spec's text ("" when it may be one): its first textSniff bytes hold a NUL byte
// or are not UTF-8 (an executable, an archive, a spreadsheet given by mistake). A UTF-16 file has NUL bytes too,
// and is named as such, since saving it as UTF-8 is the fix.
func notText(data []byte) string {
	head := data[:min(len(data), textSniff)]
	if bytes.HasPrefix(head, []byte("\xff\xfe")) || bytes.HasPrefix(head, []byte("\xfe\xff")) {
		return "not a UTF-8 text file (it is UTF-16): save it as UTF-8 (a spec is YAML or JSON)"
	}
	const binary = "not a text file (a spec is YAML or JSON)"
	if bytes.IndexByte(head, 0) >= 0 {
		return binary
	}
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		if r == utf8.RuneError && n == 1 {
			if !utf8.FullRune(head) && len(data) > textSniff {
				return "" // a character cut by the end of the sniffed bytes
			}
			return binary
		}
		head = head[n:]
	}
	return ""
}

// isFramework reports whether the file is the seed-000 framework's JSON.
func isFramework(root *node) bool {
	return root.get("prompt_template") != nil || root.get("demographic_profiles") != nil || root.get("parameters") != nil
}

// place gives a validation error the file position and source path of the nearest field the decoder recorded.
func (d *decoder) place(e *experiment.Error, root *node) {
	f := e.Field
	for p := f; ; {
		if l, ok := d.locs[p]; ok {
			e.File, e.Line, e.Column = l.file, l.line, l.col
			e.Field = l.path + f[len(p):]
			// The source path may be more precise than the resolved one: a field under a renamed parent.
			for q := e.Field; len(q) > len(l.path); {
				if m, ok := d.locs[q]; ok && m.path == q {
					e.File, e.Line, e.Column = m.file, m.line, m.col
					break
				}
				k := strings.LastIndexAny(q, ".[")
				if k <= 0 {
					break
				}
				q = q[:k]
			}
			return
		}
		k := strings.LastIndexAny(p, ".[")
		if k <= 0 {
			break
		}
		p = p[:k]
	}
	e.File, e.Line, e.Column = d.file, root.line, root.col
}

// coveredBy reports whether a decoding error was already reported at field, at one of its parents, or inside it.
// A field the decoder could not read in full (a CSV file it names is missing) reaches validation empty or in
// part, so what validation says of it ("questionnaire.items: empty") follows from the decoding error and would
// only hide it.
func coveredBy(field string, errs experiment.Errors) bool {
	for _, e := range errs {
		if e.Field == "" || within(field, e.Field) || within(e.Field, field) {
			return true
		}
	}
	return false
}

// within reports whether path is parent or one of its fields or elements.
func within(path, parent string) bool {
	return path == parent || strings.HasPrefix(path, parent+".") || strings.HasPrefix(path, parent+"[")
}

// sortByPosition orders the errors by file, line, column; errors without a position keep their order at the end.
func sortByPosition(es experiment.Errors) {
	slices.SortStableFunc(es, func(a, b *experiment.Error) int {
		if (a.Line > 0) != (b.Line > 0) {
			if a.Line > 0 {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
}
