package specfile

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/gif"  // registers GIF for DecodeConfig
	_ "image/jpeg" // registers JPEG for DecodeConfig
	_ "image/png"  // registers PNG for DecodeConfig
	"os"
	"path/filepath"
	"strings"

	"github.com/silicolab/silico/experiment"
)

var imageKeys = table[experiment.ImageSettings]{
	field("max_concurrent_downloads", func(s *experiment.ImageSettings) *int { return &s.MaxConcurrentDownloads }, (*decoder).integer),
	field("on_failure", func(s *experiment.ImageSettings) *string { return &s.OnFailure }, (*decoder).str),
	field("detail", func(s *experiment.ImageSettings) *string { return &s.Detail }, (*decoder).str),
}

// imageAlias is the row of "image", the one-picture spelling of "images": it fills the same field, so it is
// hidden from the keys errors list and may not be written beside "images".
func imageAlias[T any](at func(*T) *[]string) key[T] {
	return key[T]{name: "image", hidden: true, decode: func(d *decoder, n *node, path string, t *T) {
		if len(*at(t)) > 0 {
			d.errAt(n, path, "write either image (one picture) or images (a list), not both")
			return
		}
		*at(t) = d.images(n, path)
	}}
}

// images reads one picture reference or a list of them. URLs (https, or http of a loopback host) and data URLs
// are kept as written; anything else is a file path relative to the spec, which is read here and inlined as a
// data URL, so that a workflow input never names a file a worker would have to read.
func (d *decoder) images(n *node, path string) []string {
	var out []string
	for i, e := range d.strings(n, path) {
		p := path
		if n.kind == kindSeq {
			p = index(path, i)
			n := n.vals[i]
			if ref, ok := d.image(n, p, e); ok {
				out = append(out, ref)
			}
			continue
		}
		if ref, ok := d.image(n, p, e); ok {
			out = append(out, ref)
		}
	}
	return out
}

// image resolves one reference written at n.
func (d *decoder) image(n *node, path, ref string) (string, bool) {
	u, msg := d.resolveImage(ref)
	if msg != "" {
		d.errAt(n, path, "%s", msg)
		return "", false
	}
	return u, true
}

// resolveImage is the resolved form of a picture reference, or what is wrong with it.
func (d *decoder) resolveImage(ref string) (string, string) {
	if strings.TrimSpace(ref) == "" {
		return "", "empty; want an https URL, an http URL of localhost, or a file path relative to the spec"
	}
	if strings.Contains(ref, "://") || strings.HasPrefix(ref, "data:") {
		return ref, experiment.CheckImageRef(ref)
	}
	if d.noFiles {
		return "", fmt.Sprintf("%q is a file path; files are not read from a workflow input: the starter inlines them (`starter validate --json` shows the result)", ref)
	}
	name := ref
	if !filepath.IsAbs(ref) {
		name = filepath.Join(d.baseDir, ref)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Sprintf("cannot read %s: %s (the path is relative to the spec's directory; URLs must start with https://)", name, unwrapPathError(err))
	}
	u, err := DataURL(data)
	if err != nil {
		return "", fmt.Sprintf("%s: %v", name, err)
	}
	return u, ""
}

// DataURL is the data URL of an image file's bytes. It fails unless they are a PNG, JPEG or GIF image.
func DataURL(data []byte) (string, error) {
	_, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("not a PNG, JPEG or GIF image: %w", err)
	}
	return "data:image/" + format + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}
