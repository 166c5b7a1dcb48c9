package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/store/storetest"
	"github.com/silicolab/silico/wire"
)

const cliQuickstart = "../../examples/quickstart/experiment.yaml"

// runCLI runs the command line in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateQuickstart(t *testing.T) {
	code, out, errOut := runCLI(t, "validate", cliQuickstart)
	if code != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errOut)
	}
	want := "OK " + cliQuickstart + ": IPIP-50 quickstart · 1 model × 2 seeds × 50 items × 10 personas = 1,000 calls\n"
	if out != want {
		t.Errorf("stdout:\n%q\nwant\n%q", out, want)
	}
	if errOut != "" {
		t.Errorf("stderr not empty: %q", errOut)
	}
	// Every factor the grid multiplies is named, so the line multiplies out.
	_, out, _ = runCLI(t, "validate", "../../examples/bfi/experiment.yaml", "../../examples/wording/experiment.yaml")
	for _, want := range []string{"bfi against humans · 1 model × 2 seeds × 25 items × 12 personas × 2 option orders = 1,200 calls\n",
		"wording and order · 1 model × 2 seeds × 2 prompts × 6 items × 2 wordings × 8 personas × 2 option orders = 768 calls\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate's output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateEmbedSpec(t *testing.T) {
	code, out, errs := runCLI(t, "validate", "../../examples/embed/experiment.yaml")
	want := "OK ../../examples/embed/experiment.yaml: IPIP-50 embeddings · embed 2 models × 50 items = 100 vectors\n"
	if code != exitOK || out != want {
		t.Errorf("validate of an embed spec: exit %d, stdout %q, stderr %q; want %q", code, out, errs, want)
	}
}

// TestValidateExplainsBatchMode: validate says what batch mode means for each model that uses it.
func TestValidateExplainsBatchMode(t *testing.T) {
	b, err := os.ReadFile(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "run:\n", "run:\n  batch: {mode: batch}\n", 1)
	dir := t.TempDir()
	csv, err := os.ReadFile(filepath.Join(filepath.Dir(cliQuickstart), "ipip50.csv"))
	if err != nil {
		t.Fatal(err)
	}
	writeSpecFile(t, dir, "ipip50.csv", string(csv))
	path := writeSpecFile(t, dir, "batch.yaml", src)
	code, out, errOut := runCLI(t, "validate", path)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "model sim: batch mode: the provider's batch API at the batch price") ||
		!strings.Contains(out, "at most 50000 requests") || !strings.Contains(out, "on_expired resubmit") {
		t.Errorf("validate of a batch spec:\n%s\nwant a line explaining batch mode for model sim", out)
	}
}

func writeSpecFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const cliBadSpec = `name: bad
seeds: [1]
models:
  - id: m
    name: sim-model
    provider: sim
    params: {temperature: 7}
personas:
  - {id: p, attributes: {name: X}}
questionnaire:
  options: ["yes", "no"]
  items:
    - {id: "1", text: "I like tests."}
`

func TestValidateInvalidSpec(t *testing.T) {
	bad := writeSpecFile(t, t.TempDir(), "bad.yaml", cliBadSpec)
	code, out, errOut := runCLI(t, "validate", cliQuickstart, bad)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, errOut)
	}
	// The good spec is still reported; the bad one names file, line (7) and field, and what is accepted.
	if !strings.HasPrefix(out, "OK "+cliQuickstart) {
		t.Errorf("stdout %q: want the valid spec's OK line", out)
	}
	re := regexp.MustCompile(regexp.QuoteMeta(bad) + `:7:\d+: models\[0\]\.params\.temperature: .*want`)
	if !re.MatchString(errOut) {
		t.Errorf("stderr does not name %s:7 and models[0].params.temperature with what is accepted:\n%s", bad, errOut)
	}
	if !strings.Contains(errOut, "1 of 2 specs invalid") {
		t.Errorf("stderr lacks the count of invalid specs:\n%s", errOut)
	}

	// run refuses the same spec with the same message and exit code, before starting anything.
	code, _, errOut = runCLI(t, "run", bad, "--state-dir", filepath.Join(t.TempDir(), "state"))
	if code != exitUsage || !re.MatchString(errOut) {
		t.Errorf("run of an invalid spec: exit %d, stderr:\n%s\nwant exit 2 naming file:line and field", code, errOut)
	}
}

func TestValidateMissingFile(t *testing.T) {
	code, _, errOut := runCLI(t, "validate", "does-not-exist.yaml")
	if code != exitUsage || !strings.Contains(errOut, "does-not-exist.yaml") {
		t.Errorf("exit %d, stderr %q: want 2 naming the file", code, errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"validate", "--bogus", cliQuickstart},
		{"validate"},
		{"run"},
		{"run", cliQuickstart, "extra"},
		{"run", cliQuickstart, "--no-such-flag"},
		{"status"},
		{"cancel"},
		{"cancel", "a", "b"},
		{"cancel", "a", "--wait", "-1s"},
		{"export"},
		{"export", "some-run"}, // --output is required
		{"dev", "extra"},
		{"dev", "--address", "127.0.0.1:1"},
		{"run", cliQuickstart, "--detach"}, // --detach needs --address
	} {
		code, out, errOut := runCLI(t, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d; stdout %q stderr %q", args, code, exitUsage, out, errOut)
			continue
		}
		if !strings.HasPrefix(errOut, "Error: ") {
			t.Errorf("%q: stderr %q, want an \"Error: \" line", args, errOut)
		}
	}
}

func TestUnknownCommandIsUsage(t *testing.T) {
	code, _, errOut := runCLI(t, "bogus")
	if !strings.Contains(errOut, `unknown command "bogus"`) {
		t.Errorf("stderr %q: want the unknown command named", errOut)
	}
	if code != exitUsage {
		t.Errorf("an unknown command exits %d, want %d", code, exitUsage)
	}
}

func TestValidateJSONRoundTrip(t *testing.T) {
	code, out, errOut := runCLI(t, "validate", "--json", cliQuickstart)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	// The JSON stands alone: it loads from another directory, without the items CSV next to it.
	path := writeSpecFile(t, t.TempDir(), "spec.json", out)
	got, err := specfile.Load(path)
	if err != nil {
		t.Fatalf("validate --json output does not load: %v", err)
	}
	want, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash() != want.Hash() {
		t.Errorf("hash %s after the JSON round trip, want %s", got.Hash(), want.Hash())
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Errorf("spec differs after the JSON round trip:\n got %s\nwant %s", gb, wb)
	}
	// A plain decode gives the same spec too (what the workflow does with a raw JSON input).
	var plain experiment.Spec
	if err := json.Unmarshal([]byte(out), &plain); err != nil {
		t.Fatal(err)
	}
	plain.ApplyDefaults()
	if err := plain.Validate(); err != nil {
		t.Fatalf("decoded JSON does not validate: %v", err)
	}
	if plain.Hash() != want.Hash() || plain.NumCells() != 1000 {
		t.Errorf("decoded JSON: hash %s, %d cells; want %s, 1000", plain.Hash(), plain.NumCells(), want.Hash())
	}
}

func TestExportUnknownRun(t *testing.T) {
	dir := t.TempDir()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, out, errOut := runCLI(t, "export", "no-such-run", "--state-dir", dir, "--output", filepath.Join(dir, "out"))
	if code != exitError {
		t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, exitError, out, errOut)
	}
	if !strings.Contains(errOut, "no-such-run") || !strings.Contains(errOut, "not found") ||
		!strings.Contains(errOut, filepath.Join(dir, "results.db")) {
		t.Errorf("stderr %q: want the run, the store file and \"not found\"", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("output dir created for an unknown run (stat: %v)", err)
	}
}

// TestExportRunInProgress exports a run from a store alone: finished cells as recorded, the rest NotRun. The
// store is a SQLite file, or a PostgreSQL database given as a postgres:// DSN (--store, or SILICO_STORE).
func TestExportRunInProgress(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dsn := filepath.Join(t.TempDir(), "results.db")
		testExportRunInProgress(t, dsn, "--store", dsn)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := storetest.PostgresDSN(t)
		t.Setenv(store.EnvDSN, dsn)
		testExportRunInProgress(t, dsn)
	})
}

func testExportRunInProgress(t *testing.T, dsn string, storeArgs ...string) {
	spec, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	storeRun(t, dsn, "run-1", spec, []store.Record{
		{Index: 0, Status: store.StatusOK, OptionID: "3", Raw: "3. Neither Accurate Nor Inaccurate", PromptTokens: 100, CompletionTokens: 8, Attempts: 1},
		{Index: 7, Status: store.StatusFailed, ErrorClass: "InvalidRequest", ErrorMessage: "context too long", Attempts: 1},
	})

	out := filepath.Join(dir, "export")
	code, stdout, errOut := runCLI(t, append([]string{"export", "run-1", "-o", out}, storeArgs...)...)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	if !strings.Contains(stdout, "1000 cells") {
		t.Errorf("stdout %q: want the summary of 1000 cells", stdout)
	}
	f, err := os.Open(filepath.Join(out, results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, notRun := 0, 0
	if err := results.ReadJSONL(f, func(r results.Row) error {
		if r.Index != n {
			t.Errorf("row %d has index %d", n, r.Index)
		}
		switch r.Index {
		case 0:
			if r.Status != store.StatusOK || r.OptionID != "3" {
				t.Errorf("row 0: %+v", r)
			}
		case 7:
			if r.Status != store.StatusFailed || r.ErrorMessage != "context too long" {
				t.Errorf("row 7: %+v", r)
			}
		default:
			if r.Status == store.StatusFailed {
				notRun++
			}
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1000 || notRun != 998 {
		t.Errorf("%d rows, %d not run; want 1000 and 998", n, notRun)
	}
}

func TestExportWithoutAStoreCreatesNone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nothing-here")
	code, _, errOut := runCLI(t, "export", "some-run", "--state-dir", dir, "--output", filepath.Join(dir, "out"))
	if code != exitError || !strings.Contains(errOut, "no results store") {
		t.Errorf("exit %d, stderr %q; want 1 and \"no results store\"", code, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("export created %s (stat: %v)", dir, err)
	}
}

// TestClusterFlags: the TLS and API key flags reach the connection; a half-given certificate is a usage error,
// and a key never shows in what the starter prints.
func TestClusterFlags(t *testing.T) {
	code, _, errOut := runCLI(t, "status", "some-run", "--address", "127.0.0.1:1", "--tls-cert-path", "client.pem")
	if code != exitUsage || !strings.Contains(errOut, "--tls-key-path") {
		t.Errorf("certificate without key: exit %d, stderr %q; want %d naming --tls-key-path", code, errOut, exitUsage)
	}
	const key = "tmprl-key-never-printed"
	t.Setenv("TEMPORAL_API_KEY", key)
	code, out, errOut := runCLI(t, "status", "some-run", "--address", "127.0.0.1:1")
	if code == exitOK || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("unreachable server: exit %d, stderr %q; want an error naming the address", code, errOut)
	}
	if strings.Contains(out+errOut, key) {
		t.Errorf("the API key was printed:\n%s%s", out, errOut)
	}
	_, out, errOut = runCLI(t, "status", "--help")
	if !strings.Contains(out, "--api-key") || strings.Contains(out+errOut, key) {
		t.Errorf("status --help: want --api-key listed and no key:\n%s", out)
	}
}

// TestExportWritesRecordedElapsed: export from the store alone writes the elapsed time the run recorded.
func TestExportWritesRecordedElapsed(t *testing.T) {
	spec, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx := context.Background()
	storeRun(t, filepath.Join(dir, "results.db"), "run-1", spec, nil)
	st, err := store.Open(ctx, filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetElapsed(ctx, "run-1", 83250*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	st.Close()
	out := filepath.Join(dir, "export")
	if code, _, errOut := runCLI(t, "export", "run-1", "--store", filepath.Join(dir, "results.db"), "-o", out); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	var sum wire.Summary
	if b, err := os.ReadFile(filepath.Join(out, results.SummaryFile)); err != nil || json.Unmarshal(b, &sum) != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if sum.ElapsedSeconds != 83.25 {
		t.Errorf("elapsed_seconds = %v, want 83.25 as recorded", sum.ElapsedSeconds)
	}
}

// TestValidatePrintsNotes: a seed-000 file with a key that does not apply loads, with one note on stderr.
func TestValidatePrintsNotes(t *testing.T) {
	path := writeSpecFile(t, t.TempDir(), "fw.json", `{"name":"fw","parameters":{"seeds":[1],"lazy_load_models":true},
"models":{"m":{"type":"sim","name_or_path":"sim-model"}},
"demographic_profiles":{"a":{"attributes":{"name":"A"}}},
"questionnaire":{"name":"q","general_instruction":"Rate.","default_answer_options":{"1":{"text":"1. No","weight":1}},"instruction_items":[{"question":"Q?"}]}}`)
	code, out, errOut := runCLI(t, "validate", path)
	if code != exitOK || !strings.HasPrefix(out, "OK ") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want OK", code, out, errOut)
	}
	if strings.Count(errOut, "note: ") != 1 || !strings.Contains(errOut, path+":1:") || !strings.Contains(errOut, "lazy_load_models") {
		t.Errorf("stderr %q, want one positioned note on lazy_load_models", errOut)
	}
}
