package specfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// TestEmbedSpec loads the texts of an embed spec from a CSV column and reports its mistakes with file, line and
// field.
func TestEmbedSpec(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("texts.csv", "key,sentence\na,first text\nb,second text\n")
	good := write("good.yaml", `name: e
kind: embed
models: [{id: m, name: text-embedding-3-small, provider: sim}]
embed: {texts: csv, file: texts.csv, column: sentence, id_column: key, max_inputs_per_request: 8}
`)
	s, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	texts, err := s.EmbedTexts()
	if err != nil || len(texts) != 2 || texts[1] != (experiment.EmbedText{ID: "b", Text: "second text"}) {
		t.Fatalf("texts %+v, error %v", texts, err)
	}
	if s.NumCells() != 2 || len(s.Passes()) != 1 || s.Embed.MaxTokensPerRequest != experiment.DefaultMaxTokensPerRequest {
		t.Errorf("cells %d, passes %d, max tokens %d", s.NumCells(), len(s.Passes()), s.Embed.MaxTokensPerRequest)
	}

	bad := write("bad.yaml", `name: e
kind: embed
seeds: [1, 2]
models: [{id: m, name: text-embedding-3-small, provider: sim}]
embed: {texts: csv, file: texts.csv, column: text}
`)
	_, err = Load(bad)
	if err == nil {
		t.Fatal("bad spec loaded")
	}
	for _, want := range []string{
		"bad.yaml:3:1: seeds: 2 seeds, but embeddings do not sample",
		`texts.csv:1:1: embed.column: no column "text" in the header`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	src := write("src.yaml", `name: e
kind: embed
models: [{id: m, name: text-embedding-3-small, provider: sim}]
embed: {texts: sentences}
`)
	if _, err := Load(src); err == nil || !strings.Contains(err.Error(), `src.yaml:4:16: embed.texts: unknown source "sentences"; want "items", "personas", "prompts" or "csv"`) {
		t.Errorf("unknown source: %v", err)
	}
}
