package specfile

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

const imageSpec = `name: pictures
models: [{name: m}]
personas: [{id: a}, {id: b, image: me.png}]
questionnaire:
  options: [No, Yes]
  items:
    - {text: Rate this face, image: face.png}
    - {text: Rate this ad, images: ["https://img.example/ad.png", "http://127.0.0.1:9/x.png"]}
`

func writePNG(t *testing.T, dir, name string) {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Files are read relative to the spec and inlined as data URLs; URLs are kept; Render puts the persona's picture
// and then the item's on the user message.
func TestImagesFromFilesAndURLs(t *testing.T) {
	dir := t.TempDir()
	writePNG(t, dir, "face.png")
	writePNG(t, dir, "me.png")
	s, err := Parse([]byte(imageSpec), filepath.Join(dir, "spec.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	face := s.Questionnaire.Items[0].Images
	if len(face) != 1 || !strings.HasPrefix(face[0], "data:image/png;base64,") {
		t.Fatalf("item image = %.40q, want a PNG data URL", face)
	}
	if ad := s.Questionnaire.Items[1].Images; len(ad) != 2 || ad[0] != "https://img.example/ad.png" {
		t.Errorf("item images = %q, want the URLs as written", ad)
	}
	msgs, err := s.Render(experiment.Cell{Item: 0, Persona: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	user := msgs[len(msgs)-1]
	if len(user.Images) != 2 || user.Images[0] != s.Personas[1].Images[0] || user.Images[1] != face[0] || len(msgs[0].Images) != 0 {
		t.Errorf("rendered pictures: system %d, user %d; want none on the system message, persona's then item's on the user's", len(msgs[0].Images), len(user.Images))
	}
	// The resolved spec is a workflow input that names no file.
	saved, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseInput(saved, "input"); err != nil {
		t.Errorf("the resolved spec does not decode as a workflow input: %v", err)
	}
}

func TestImageErrors(t *testing.T) {
	dir := t.TempDir()
	writePNG(t, dir, "me.png")
	if err := os.WriteFile(filepath.Join(dir, "face.png"), []byte("not a picture"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"plain http", "https://img.example/ad.png", "http://img.example/ad.png", `spec.yaml:8:37: questionnaire.items[1].images[0]: "http://img.example/ad.png" is plain http; want https (http is accepted only for localhost`},
		{"missing file", "image: me.png", "image: nope.png", "personas[1].image: cannot read " + filepath.Join(dir, "nope.png")},
		{"not a picture", "", "", "questionnaire.items[0].image: " + filepath.Join(dir, "face.png") + ": not a PNG, JPEG or GIF image"},
		{"both keys", "image: face.png}", "image: me.png, images: [me.png]}", "write either image (one picture) or images (a list), not both"},
		{"ftp", "https://img.example/ad.png", "ftp://img.example/ad.png", `has scheme "ftp"; want an https URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(imageSpec, tc.from, tc.to, 1)
			_, err := Parse([]byte(doc), filepath.Join(dir, "spec.yaml"), dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	// A workflow input may not name a file.
	input := `{"name": "x", "models": [{"name": "m"}], "personas": [{"id": "a", "images": ["me.png"]}],
		"questionnaire": {"options": ["No", "Yes"], "items": ["Q"]}}`
	if _, err := ParseInput([]byte(input), "input"); err == nil || !strings.Contains(err.Error(), "files are not read from a workflow input") {
		t.Errorf("a file in a workflow input: err = %v", err)
	}
}

// An items CSV may give each item one picture in an image column, resolved as in the spec.
func TestImageColumnOfItemsCSV(t *testing.T) {
	dir := t.TempDir()
	writePNG(t, dir, "face.png")
	csv := "id,text,image\nf,Rate this face,face.png\nad,Rate this ad,https://img.example/ad.png\nq,No picture,\nbad,Plain http,http://img.example/x.png\n"
	if err := os.WriteFile(filepath.Join(dir, "items.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "name: csv\nmodels: [{name: m}]\npersonas: [{id: a}]\nquestionnaire: {options: [No, Yes], items: {file: items.csv}}\n"
	_, err := Parse([]byte(doc), filepath.Join(dir, "spec.yaml"), dir)
	want := filepath.Join(dir, "items.csv") + `:5:3: questionnaire.items[3].image: "http://img.example/x.png" is plain http`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "items.csv"), []byte(strings.TrimSuffix(csv, "bad,Plain http,http://img.example/x.png\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Parse([]byte(doc), filepath.Join(dir, "spec.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	items := s.Questionnaire.Items
	if len(items[0].Images) != 1 || !strings.HasPrefix(items[0].Images[0], "data:image/png;base64,") ||
		len(items[1].Images) != 1 || items[1].Images[0] != "https://img.example/ad.png" || len(items[2].Images) != 0 {
		t.Errorf("images %.60q %q %q", items[0].Images, items[1].Images, items[2].Images)
	}
}
