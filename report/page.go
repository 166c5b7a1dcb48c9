package report

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Page parses the page template name from fsys beside the report's own templates, so that it shares the report's
// head (template "head": the Content-Security-Policy default-src 'none', no script, the inlined style) and its
// helpers (stat, int, pct, pctp, f1, low), and extra besides. Another package's HTML page is built this way, not by copying the
// report's markup, so every silico page looks and is locked down alike. Execute the result with
// ExecuteTemplate(w, name, data).
func Page(fsys fs.FS, name string, extra template.FuncMap) (*template.Template, error) {
	t, err := parsePage().Funcs(extra).ParseFS(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return t, nil
}

// WriteAtomic writes dir/name (dir is created if needed) with write and returns its path. The file is written
// under a temporary name and renamed into place when complete, so a reader never sees half a page and a failed
// write leaves an earlier file untouched.
func WriteAtomic(dir, name string, write func(io.Writer) error) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 256<<10)
	if err := write(w); err != nil {
		return "", err
	}
	if err := w.Flush(); err != nil {
		return "", fmt.Errorf("report: write %s: %w", f.Name(), err)
	}
	if err := f.Chmod(0o644); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("report: close %s: %w", f.Name(), err)
	}
	path := filepath.Join(dir, name)
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	done = true
	return path, nil
}
