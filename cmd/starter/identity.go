package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// A run's id is the hash of its spec as this release resolves it, so a release that gives spec files a new
// default (run.seed_per_cell) would give the same file a new id, and `starter run SPEC` would start a new run
// and pay for every cell again while an earlier release's run of it waited unfinished. The file's earlier forms
// (specfile.Earlier: the spec without the defaults it gained since) have the ids those releases gave it: when
// the results store knows no run of this release's id but one of an earlier form's, the command goes on with
// that run, as it was started. New defaults apply to new runs only (--new). When none matches, runSpec says
// which unfinished runs of the same name there are and how they differ (sameNameNote).

// earlierForm is the spec file as an earlier release resolved it: its run id, the spec and its canonical JSON,
// and the keys of the defaults it lacks.
type earlierForm struct {
	id        string
	spec      *experiment.Spec
	canonical []byte
	keys      []string
}

// earlierForms are spec's earlier forms (specfile.Earlier), newest release first, with their run ids.
func earlierForms(spec *experiment.Spec) ([]earlierForm, error) {
	forms, keys, err := specfile.Earlier(spec)
	if err != nil {
		return nil, err
	}
	out := make([]earlierForm, len(forms))
	for i, f := range forms {
		c, canonical, err := f.Canonical()
		if err != nil {
			return nil, err
		}
		out[i] = earlierForm{id: workflowIDOf(c.Name, experiment.HashOf(canonical)), spec: c, canonical: canonical, keys: keys[i]}
	}
	return out, nil
}

// pickEarlier returns the earlier form whose run the results store conn names holds, when it holds no run id
// (this release's run of the spec); nil when there is none or no store is at hand (with --address, a store
// that is not named). The form returned is validated, ready to run.
func pickEarlier(ctx context.Context, conn *connFlags, id string, forms []earlierForm) (*earlierForm, error) {
	if len(forms) == 0 || !conn.storeNamed() {
		return nil, nil
	}
	if dsn := conn.dsn(); !store.IsPostgres(dsn) {
		if _, err := os.Stat(dsn); err != nil {
			return nil, nil // no store yet: no run at all
		}
	}
	st, err := store.Open(ctx, conn.dsn())
	if err != nil {
		return nil, fmt.Errorf("open results store: %w", err)
	}
	defer st.Close()
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, err
	}
	known := func(id string) bool {
		return slices.ContainsFunc(runs, func(r store.RunInfo) bool { return r.ID == id })
	}
	if known(id) {
		return nil, nil
	}
	for _, f := range forms {
		if !known(f.id) {
			continue
		}
		if err := f.spec.Validate(); err != nil {
			return nil, fmt.Errorf("the spec as an earlier release resolved it: %w", err)
		}
		return &f, nil
	}
	return nil, nil
}

// earlierNote says that the command goes on with run f.id, which an earlier release started, and why.
func earlierNote(w io.Writer, conn *connFlags, f *earlierForm, specRef string) {
	fmt.Fprintf(w, "note: run %s of this spec was started by an earlier release, which resolved it without %s; it goes on "+
		"as it was started (a release's new defaults apply to new runs only): `%s` starts a run with this release's defaults\n",
		f.id, strings.Join(f.keys, ", "), conn.command("run", specRef, "--new"))
}

// sameNameNote says, for a new run id of spec (canonical is its JSON) that a spec file started, which runs of the
// same name the results store holds unfinished (an earlier release's, or the file's before an edit), how their
// specs differ from this one, and the command that finishes each: the user may have meant to go on with one.
func sameNameNote(ctx context.Context, w io.Writer, sess *session, id string, spec *experiment.Spec, canonical []byte) {
	if sess.store == nil {
		return
	}
	runs, err := sess.store.Runs(ctx)
	if err != nil {
		return
	}
	prefix := workflowIDOf(spec.Name, "")
	shown := 0
	for _, r := range runs { // newest first
		if r.ID == id || !strings.HasPrefix(r.ID, prefix) || store.Terminal(r.State) || r.State == "" && r.HasElapsed {
			continue
		}
		saved, err := sess.store.LoadRun(ctx, r.ID)
		if err != nil {
			continue
		}
		other, err := specfile.ParseSaved(saved, r.ID)
		if err != nil || other.Name != spec.Name {
			continue
		}
		_, otherCanonical, err := other.Canonical()
		if err != nil {
			continue
		}
		done := 0
		if n, err := sess.store.Counts(ctx, r.ID); err == nil {
			done = n.Records
		}
		fmt.Fprintf(w, "note: this is a new run; run %s of the same name has not finished (%s of %s cells recorded) and was "+
			"resolved differently (%s): `%s` finishes it\n", r.ID, thousands(done), thousands(other.NumCells()),
			strings.Join(specDiff(canonical, otherCanonical, 4), "; "), sess.flags.command("run", r.ID))
		if shown++; shown == 3 {
			return
		}
	}
}

// specDiff names up to limit places where the spec JSON a (this run's) differs from b (another run's), as
// "path: a here, b there" ("absent" where one lacks the key), in key order.
func specDiff(a, b []byte, limit int) []string {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return []string{"unreadable"}
	}
	var out []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		if len(out) > limit {
			return
		}
		mx, okx := x.(map[string]any)
		my, oky := y.(map[string]any)
		if okx && oky {
			keys := make([]string, 0, len(mx)+len(my))
			for k := range mx {
				keys = append(keys, k)
			}
			for k := range my {
				if _, ok := mx[k]; !ok {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				p := k
				if path != "" {
					p = path + "." + k
				}
				vx, inx := mx[k]
				vy, iny := my[k]
				switch {
				case !inx:
					out = append(out, fmt.Sprintf("%s: absent here, %s there", p, short(vy)))
				case !iny:
					out = append(out, fmt.Sprintf("%s: %s here, absent there", p, short(vx)))
				default:
					walk(p, vx, vy)
				}
			}
			return
		}
		ax, okx := x.([]any)
		ay, oky := y.([]any)
		if okx && oky && len(ax) == len(ay) {
			for i := range ax {
				walk(fmt.Sprintf("%s[%d]", path, i), ax[i], ay[i])
			}
			return
		}
		if bx, by := compact(x), compact(y); !bytes.Equal(bx, by) {
			out = append(out, fmt.Sprintf("%s: %s here, %s there", path, short(x), short(y)))
		}
	}
	walk("", x, y)
	if len(out) > limit {
		out = append(out[:limit], "…")
	}
	return out
}

// compact is v's JSON.
func compact(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// short is v's JSON, cut to 40 characters.
func short(v any) string {
	r := []rune(string(compact(v)))
	if len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return string(r)
}
