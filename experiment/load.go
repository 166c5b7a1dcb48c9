package experiment

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/silicolab/silico/suggest"
)

// Load reads the spec file at path (YAML or JSON, this project's format or the seed-000 framework's JSON) and
// returns it resolved, defaulted and validated. Files it names (persona and item CSVs) are read relative to the
// spec's directory. Every mistake is reported at once as Errors with file, line and field.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Errors{{File: path, Msg: "cannot read the spec: " + unwrapPathError(err)}}
	}
	return Parse(data, path, filepath.Dir(path))
}

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
func Parse(data []byte, filename, baseDir string) (*Spec, error) {
	return parse(data, &decoder{file: filename, baseDir: baseDir, locs: map[string]loc{}}, nil)
}

// ParseInput reads a spec that arrived as a workflow input: exactly as Parse reads a file (the same keys, the
// same errors, the same defaults), except that the top-level keys in control are not the spec's and are
// skipped, and no file is read (a worker must not read files named by whoever started a run: inline them with
// `starter validate --json`).
func ParseInput(data []byte, name string, control ...string) (*Spec, error) {
	return parse(data, &decoder{file: name, noFiles: true, locs: map[string]loc{}}, control)
}

func parse(data []byte, d *decoder, control []string) (*Spec, error) {
	filename := d.file
	root, perr := parseNodes(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), filename)
	if perr != nil {
		return nil, Errors{perr}
	}
	s := &Spec{}
	if root.kind != kindMap {
		d.errAt(root, "", "want a mapping with name, models, personas, questionnaire, ..., got %s", root.describe())
		return nil, d.errs
	}
	root.drop(control)
	if isFramework(root) {
		d.framework(root, s)
	} else {
		d.spec(root, s)
	}
	if s.Name == "" && root.get("name") == nil && filename != "" {
		base := filepath.Base(filename)
		s.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	s.ApplyDefaults()
	var verrs Errors
	if err := s.Validate(); err != nil {
		verrs = err.(Errors)
	}
	errs := d.errs
	for _, e := range verrs {
		d.place(e, root)
		if !coveredBy(e.Field, d.errs) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		errs.sortByPosition()
		return nil, errs
	}
	s.Notes = d.notes
	return s, nil
}

// isFramework reports whether the file is the seed-000 framework's JSON.
func isFramework(root *node) bool {
	return root.get("prompt_template") != nil || root.get("demographic_profiles") != nil || root.get("parameters") != nil
}

// place gives a validation error the file position and source path of the nearest field the decoder recorded.
func (d *decoder) place(e *Error, root *node) {
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

// coveredBy reports whether a decoding error was already reported at field or one of its parents.
func coveredBy(field string, errs Errors) bool {
	for _, e := range errs {
		if e.Field == field || strings.HasPrefix(field, e.Field+".") || strings.HasPrefix(field, e.Field+"[") || e.Field == "" {
			return true
		}
	}
	return false
}

var (
	specKeys          = []string{"name", "description", "seeds", "models", "prompt", "personas", "questionnaire", "run", "budget_usd", "simulator"}
	modelKeys         = []string{"id", "name", "provider", "base_url", "api_key_env", "params", "max_concurrency", "rpm", "tpm", "burst", "price", "cache"}
	paramKeys         = []string{"temperature", "top_p", "max_tokens", "stop"}
	promptKeys        = []string{"type", "template", "messages"}
	personaKeys       = []string{"id", "attributes", "template"}
	questionnaireKeys = []string{"name", "instruction", "options", "scales", "items"}
	itemKeys          = []string{"id", "text", "scale", "reversed", "options"}
	runKeys           = []string{"max_concurrency", "max_parallel_passes", "on_error", "cumulative", "call_timeout", "max_attempts", "stall_timeout", "chunk_size", "cache"}
)

// spec decodes this project's format.
func (d *decoder) spec(root *node, s *Spec) {
	f := d.fields(root, "", specKeys...)
	s.Name = d.str(f["name"], "name")
	s.Description = d.str(f["description"], "description")
	s.Seeds = d.seeds(f["seeds"], "seeds")
	s.BudgetUSD = d.number(f["budget_usd"], "budget_usd")
	for i, m := range d.list(f["models"], "models", "models {id, name, provider, ...}") {
		s.Models = append(s.Models, d.model(m, index("models", i)))
	}
	if p := f["prompt"]; p != nil {
		s.Prompt = d.prompt(p, "prompt")
	}
	d.personas(f["personas"], s)
	if q := f["questionnaire"]; q != nil {
		d.questionnaire(q, s)
	}
	if r := f["run"]; r != nil {
		s.Run = d.run(r, "run")
	}
	s.Simulator = d.simulator(f["simulator"], "simulator")
}

var faultKeys = []string{"rate_limit", "quota", "server_500", "server_503", "hang", "drop", "malformed", "fail_cells"}

// simulator reads the settings of the built-in simulator.
func (d *decoder) simulator(n *node, path string) *SimulatorSettings {
	if n == nil {
		return nil
	}
	f := d.fields(n, path, "latency", "jitter", "rpm", "tpm", "faults")
	if f == nil {
		return nil
	}
	sim := &SimulatorSettings{
		Latency: d.duration(f["latency"], path+".latency"),
		Jitter:  d.duration(f["jitter"], path+".jitter"),
		RPM:     d.integer(f["rpm"], path+".rpm"),
		TPM:     d.integer(f["tpm"], path+".tpm"),
	}
	if fn := f["faults"]; fn != nil {
		p := path + ".faults"
		if ff := d.fields(fn, p, faultKeys...); ff != nil {
			fl := &sim.Faults
			for k, dst := range map[string]*float64{"rate_limit": &fl.RateLimit, "quota": &fl.Quota, "server_500": &fl.Server500,
				"server_503": &fl.Server503, "hang": &fl.Hang, "drop": &fl.Drop, "malformed": &fl.Malformed} {
				*dst = d.number(ff[k], p+"."+k)
			}
			fl.FailCells = d.strings(ff["fail_cells"], p+".fail_cells")
		}
	}
	return sim
}

func (d *decoder) model(n *node, path string) Model {
	keys := modelKeys
	if n.kind == kindMap && n.get("api_key") != nil {
		keys = append(append([]string(nil), modelKeys...), "api_key")
	}
	f := d.fields(n, path, keys...)
	var m Model
	if f == nil {
		return m
	}
	d.noSecret(f["api_key"], child(path, "api_key"))
	m.ID = d.str(f["id"], child(path, "id"))
	m.Name = d.str(f["name"], child(path, "name"))
	m.Provider = d.str(f["provider"], child(path, "provider"))
	m.BaseURL = d.str(f["base_url"], child(path, "base_url"))
	m.APIKeyEnv = d.str(f["api_key_env"], child(path, "api_key_env"))
	if p := f["params"]; p != nil {
		m.Params = d.params(p, child(path, "params"), paramKeys)
	}
	m.MaxConcurrency = d.integer(f["max_concurrency"], child(path, "max_concurrency"))
	m.RPM = d.integer(f["rpm"], child(path, "rpm"))
	m.TPM = d.integer(f["tpm"], child(path, "tpm"))
	m.Burst = d.number(f["burst"], child(path, "burst"))
	m.Cache = CachePolicy(d.str(f["cache"], child(path, "cache")))
	if p := f["price"]; p != nil {
		pf := d.fields(p, child(path, "price"), "input_per_mtok", "output_per_mtok")
		if pf != nil {
			m.Price = &Price{
				InputPerMTok:  d.number(pf["input_per_mtok"], child(path, "price.input_per_mtok")),
				OutputPerMTok: d.number(pf["output_per_mtok"], child(path, "price.output_per_mtok")),
			}
		}
	}
	return m
}

// noSecret rejects an API key written into the spec.
func (d *decoder) noSecret(n *node, path string) {
	if n != nil {
		d.errAt(n, path, "an API key may not be written in the spec (it would end up in workflow history and logs); "+
			"put it in an environment variable of the worker and name that variable with api_key_env, e.g. api_key_env: OPENAI_API_KEY")
	}
}

func (d *decoder) params(n *node, path string, keys []string) Params {
	f := d.fields(n, path, keys...)
	var p Params
	if f == nil {
		return p
	}
	p.Temperature = d.numberPtr(f["temperature"], child(path, "temperature"))
	p.TopP = d.numberPtr(f["top_p"], child(path, "top_p"))
	p.MaxTokens = d.integer(f["max_tokens"], child(path, "max_tokens"))
	p.Stop = d.strings(f["stop"], child(path, "stop"))
	return p
}

func (d *decoder) prompt(n *node, path string) Prompt {
	f := d.fields(n, path, promptKeys...)
	var p Prompt
	if f == nil {
		return p
	}
	p.Type = d.str(f["type"], child(path, "type"))
	p.Template = d.str(f["template"], child(path, "template"))
	mp := child(path, "messages")
	for i, m := range d.list(f["messages"], mp, "messages {role, content}") {
		mf := d.fields(m, index(mp, i), "role", "content")
		if mf == nil {
			continue
		}
		p.Messages = append(p.Messages, Message{
			Role:    d.str(mf["role"], index(mp, i)+".role"),
			Content: d.str(mf["content"], index(mp, i)+".content"),
		})
	}
	if p.Type == "" {
		if p.Template != "" {
			p.Type = PromptNormal
		} else {
			p.Type = PromptChat
		}
	}
	return p
}

func (d *decoder) personas(n *node, s *Spec) {
	if n == nil {
		return
	}
	if n.kind == kindMap && n.get("file") != nil {
		f := d.fields(n, "personas", "file", "template")
		if f == nil {
			return
		}
		d.personaCSV(f["file"], d.str(f["template"], "personas.template"), s)
		return
	}
	if n.kind == kindMap { // id → persona, in file order
		for i, k := range n.keys {
			p := d.persona(n.vals[i], child("personas", k.str), k.str)
			d.mark(index("personas", len(s.Personas)), child("personas", k.str), n.vals[i])
			s.Personas = append(s.Personas, p)
		}
		return
	}
	for i, e := range d.list(n, "personas", "personas {id, attributes, template}") {
		p := d.persona(e, index("personas", i), "")
		if p.ID == "" {
			p.ID = strconv.Itoa(i + 1)
		}
		s.Personas = append(s.Personas, p)
	}
}

func (d *decoder) persona(n *node, path, id string) Persona {
	keys := personaKeys
	if id != "" {
		keys = personaKeys[1:]
	}
	f := d.fields(n, path, keys...)
	p := Persona{ID: id}
	if f == nil {
		return p
	}
	if v, ok := f["id"]; ok {
		p.ID = d.str(v, child(path, "id"))
	}
	p.Attributes = d.attributes(f["attributes"], child(path, "attributes"))
	p.Template = d.str(f["template"], child(path, "template"))
	return p
}

// readCSV opens a CSV file named by the spec; n is the spec's file node, for errors.
func (d *decoder) readCSV(n *node, path string) (name string, header []string, rows [][]string, lines []int, ok bool) {
	rel := d.str(n, path)
	if rel == "" {
		d.errAt(n, path, "want the path of a CSV file, relative to the spec")
		return "", nil, nil, nil, false
	}
	if d.noFiles {
		d.errAt(n, path, "files are not read from a workflow input; inline them with `starter validate --json`")
		return "", nil, nil, nil, false
	}
	name = rel
	if !filepath.IsAbs(rel) {
		name = filepath.Join(d.baseDir, rel)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		d.errAt(n, path, "cannot read %s: %s (the path is relative to the spec's directory)", name, unwrapPathError(err))
		return name, nil, nil, nil, false
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			e := &Error{File: name, Field: path, Msg: "not valid CSV: " + err.Error()}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				e.Line, e.Column, e.Msg = pe.Line, pe.Column, "not valid CSV: "+pe.Err.Error()
			}
			d.errs = append(d.errs, e)
			return name, nil, nil, nil, false
		}
		line, _ := r.FieldPos(0)
		if header == nil {
			header = make([]string, len(rec))
			for i, h := range rec {
				header[i] = strings.TrimSpace(h)
			}
			continue
		}
		rows = append(rows, rec)
		lines = append(lines, line)
	}
	if header == nil {
		d.errs = append(d.errs, &Error{File: name, Line: 1, Column: 1, Msg: "empty CSV: want a header row and one row per entry"})
		return name, nil, nil, nil, false
	}
	return name, header, rows, lines, true
}

func (d *decoder) personaCSV(n *node, template string, s *Spec) {
	name, header, rows, lines, ok := d.readCSV(n, "personas.file")
	if !ok {
		return
	}
	idCol := -1
	for i, h := range header {
		if strings.EqualFold(h, "id") {
			idCol = i
		}
	}
	if idCol < 0 {
		d.errs = append(d.errs, &Error{File: name, Line: 1, Column: 1, Field: "personas.file",
			Msg: fmt.Sprintf("no id column in the header (%s); want an id column and one column per attribute", strings.Join(header, ","))})
		return
	}
	for r, row := range rows {
		p := Persona{Template: template, Attributes: map[string]string{}}
		for i, v := range row {
			if i == idCol {
				p.ID = strings.TrimSpace(v)
			} else {
				p.Attributes[header[i]] = v
			}
		}
		res := index("personas", len(s.Personas))
		d.locs[res] = loc{file: name, path: res, line: lines[r], col: 1}
		d.locs[res+".template"] = loc{file: d.file, path: "personas.template", line: n.line, col: n.col}
		s.Personas = append(s.Personas, p)
	}
}

func (d *decoder) questionnaire(n *node, s *Spec) {
	f := d.fields(n, "questionnaire", questionnaireKeys...)
	if f == nil {
		return
	}
	q := &s.Questionnaire
	q.Name = d.str(f["name"], "questionnaire.name")
	q.Instruction = d.str(f["instruction"], "questionnaire.instruction")
	if o := f["options"]; o != nil {
		q.Options = *d.optionSet(o, "questionnaire.options", "questionnaire.options", "")
	} else {
		d.mark("questionnaire.options", "questionnaire.options", n)
	}
	q.Scales = d.scales(f["scales"], "questionnaire.scales")
	items := f["items"]
	if items == nil {
		d.mark("questionnaire.items", "questionnaire.items", n)
	}
	if items != nil && items.kind == kindMap {
		if ff := d.fields(items, "questionnaire.items", "file"); ff != nil {
			q.Items = d.itemCSV(ff["file"])
		}
		return
	}
	for i, e := range d.list(items, "questionnaire.items", "items {id, text, scale, reversed, options}") {
		p := index("questionnaire.items", i)
		it := Item{ID: strconv.Itoa(i + 1)}
		if e.kind == kindScalar {
			it.Text = e.str
			q.Items = append(q.Items, it)
			continue
		}
		ff := d.fields(e, p, itemKeys...)
		if ff == nil {
			continue
		}
		if v, ok := ff["id"]; ok {
			it.ID = d.str(v, p+".id")
		}
		it.Text = d.str(ff["text"], p+".text")
		it.Scale = d.str(ff["scale"], p+".scale")
		it.Reversed = d.boolean(ff["reversed"], p+".reversed")
		if o := ff["options"]; o != nil {
			it.Options = d.optionSet(o, p+".options", p+".options", "")
		}
		q.Items = append(q.Items, it)
	}
}

func (d *decoder) scales(n *node, path string) []Scale {
	var out []Scale
	if n != nil && n.kind == kindMap { // id → name
		for i, k := range n.keys {
			p := child(path, k.str)
			d.mark(index(path, i), p, n.vals[i])
			out = append(out, Scale{ID: k.str, Name: d.str(n.vals[i], p)})
		}
		return out
	}
	for i, e := range d.list(n, path, "scales {id, name}") {
		p := index(path, i)
		if e.kind == kindScalar {
			out = append(out, Scale{ID: e.str})
			continue
		}
		f := d.fields(e, p, "id", "name")
		if f == nil {
			continue
		}
		out = append(out, Scale{ID: d.str(f["id"], p+".id"), Name: d.str(f["name"], p+".name")})
	}
	return out
}

var itemColumns = []string{"id", "text", "scale", "reversed", "keyed"}

// itemCSV reads items from a CSV with columns id, text, scale and reversed (true/false) or keyed (+/-).
func (d *decoder) itemCSV(n *node) []Item {
	name, header, rows, lines, ok := d.readCSV(n, "questionnaire.items.file")
	if !ok {
		return nil
	}
	col := map[string]int{}
	bad := false
	for i, h := range header {
		h = strings.ToLower(h)
		if !contains(itemColumns, h) {
			hint := suggest.DidYouMean(h, itemColumns)
			if h == "question" {
				hint = ` (did you mean "text"?)`
			}
			d.errs = append(d.errs, &Error{File: name, Line: 1, Column: 1, Field: "questionnaire.items.file",
				Msg: fmt.Sprintf("unknown column %q%s; accepted columns: %s", h, hint, strings.Join(itemColumns, ", "))})
			bad = true
			continue
		}
		col[h] = i
	}
	_, hasRev := col["reversed"]
	_, hasKeyed := col["keyed"]
	if hasRev && hasKeyed {
		d.errs = append(d.errs, &Error{File: name, Line: 1, Column: 1, Field: "questionnaire.items.file",
			Msg: "both reversed and keyed columns; keep one (reversed: true/false, or keyed: +/-)"})
		bad = true
	}
	if _, ok := col["text"]; !ok {
		d.errs = append(d.errs, &Error{File: name, Line: 1, Column: 1, Field: "questionnaire.items.file",
			Msg: fmt.Sprintf("no text column in the header (%s); want columns id, text, scale and reversed or keyed", strings.Join(header, ","))})
		bad = true
	}
	if bad {
		return nil
	}
	var out []Item
	for r, row := range rows {
		cell := func(c string) string {
			if i, ok := col[c]; ok {
				return strings.TrimSpace(row[i])
			}
			return ""
		}
		it := Item{ID: cell("id"), Text: cell("text"), Scale: cell("scale")}
		if it.ID == "" {
			it.ID = strconv.Itoa(r + 1)
		}
		res := index("questionnaire.items", len(out))
		d.locs[res] = loc{file: name, path: res, line: lines[r], col: 1}
		if hasKeyed {
			switch cell("keyed") {
			case "+", "":
			case "-":
				it.Reversed = true
			default:
				d.errs = append(d.errs, &Error{File: name, Line: lines[r], Column: col["keyed"] + 1, Field: res + ".keyed",
					Msg: fmt.Sprintf("keyed %q: want + or -", cell("keyed"))})
			}
		}
		if hasRev {
			switch strings.ToLower(cell("reversed")) {
			case "true", "1", "yes":
				it.Reversed = true
			case "false", "0", "no", "":
			default:
				d.errs = append(d.errs, &Error{File: name, Line: lines[r], Column: col["reversed"] + 1, Field: res + ".reversed",
					Msg: fmt.Sprintf("reversed %q: want true or false", cell("reversed"))})
			}
		}
		out = append(out, it)
	}
	return out
}

func (d *decoder) run(n *node, path string) RunSettings {
	f := d.fields(n, path, runKeys...)
	var r RunSettings
	if f == nil {
		return r
	}
	r.MaxConcurrency = d.integer(f["max_concurrency"], path+".max_concurrency")
	r.MaxParallelPasses = d.integer(f["max_parallel_passes"], path+".max_parallel_passes")
	r.OnError = d.str(f["on_error"], path+".on_error")
	r.Cumulative = d.boolean(f["cumulative"], path+".cumulative")
	r.CallTimeout = d.duration(f["call_timeout"], path+".call_timeout")
	r.MaxAttempts = d.integer(f["max_attempts"], path+".max_attempts")
	r.StallTimeout = d.duration(f["stall_timeout"], path+".stall_timeout")
	r.ChunkSize = d.integer(f["chunk_size"], path+".chunk_size")
	r.Cache = CachePolicy(d.str(f["cache"], path+".cache"))
	return r
}
