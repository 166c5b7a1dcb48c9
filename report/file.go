package report

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes the report of r to dir/report.html (dir is created if needed) and returns its path. The
// page is written under a temporary name and renamed into place when complete, so a reader never sees half a
// report and a failed write leaves an earlier report untouched.
func WriteFile(dir string, r *Run) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+FileName+".tmp-*")
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
	if err := Write(w, r); err != nil {
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
	path := filepath.Join(dir, FileName)
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	done = true
	return path, nil
}
