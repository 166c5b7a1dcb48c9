package report

import "io"

// WriteFile writes the report of r to dir/report.html (dir is created if needed) and returns its path, atomically
// (see WriteAtomic): a reader never sees half a report and a failed write leaves an earlier report untouched.
func WriteFile(dir string, r *Run) (string, error) {
	return WriteAtomic(dir, FileName, func(w io.Writer) error { return Write(w, r) })
}
