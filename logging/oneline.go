package logging

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"go.uber.org/zap/zapcore"
)

// OneLine returns a core for the Temporal SDK's logger that shows a person its errors: each distinct error once,
// as one line in silico's words on w ("error: RunSeedPass of run R failed (attempt 2): store is closed"), ending with where the full entry is (details, a log file). Entries below error level, and the
// same error again, are not shown: the full log keeps them all (tee this core with it).
func OneLine(w io.Writer, details string) zapcore.Core {
	return &oneLine{out: &oneLineOut{w: w, details: details, seen: map[string]bool{}}}
}

// oneLineOut is what the cores derived from one OneLine share: the writer and the errors already shown.
type oneLineOut struct {
	mu      sync.Mutex
	w       io.Writer
	details string
	seen    map[string]bool
}

// oneLine is a OneLine core with the fields its logger was given (With).
type oneLine struct {
	out    *oneLineOut
	fields []zapcore.Field
}

func (c *oneLine) Enabled(l zapcore.Level) bool { return l >= zapcore.ErrorLevel }

func (c *oneLine) With(fields []zapcore.Field) zapcore.Core {
	return &oneLine{out: c.out, fields: append(append([]zapcore.Field(nil), c.fields...), fields...)}
}

func (c *oneLine) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *oneLine) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(append([]zapcore.Field(nil), c.fields...), fields...) {
		f.AddTo(enc)
	}
	line := sayError(e.Message, enc.Fields)
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	if c.out.seen[line] {
		return nil
	}
	c.out.seen[line] = true
	_, err := fmt.Fprintf(c.out.w, "%s (details: %s)\n", line, c.out.details)
	return err
}

func (c *oneLine) Sync() error { return nil }

// sayError says an SDK error entry (msg with its fields) in silico's words: what failed, for which run, why.
func sayError(msg string, f map[string]any) string {
	str := func(k string) string {
		if v, ok := f[k]; ok && v != nil {
			return strings.TrimSpace(fmt.Sprint(v))
		}
		return ""
	}
	why := str("Error")
	if why == "" {
		why = str("error")
	}
	run := ""
	if id := str("WorkflowID"); id != "" {
		run = " of run " + id
	}
	switch msg {
	case sdkActivityError:
		what := str("ActivityType")
		if what == "" {
			what = "a step"
		}
		attempt := ""
		if a := str("Attempt"); a != "" {
			attempt = " (attempt " + a + ")"
		}
		return fmt.Sprintf("error: %s%s failed%s: %s", what, run, attempt, why)
	}
	msg = strings.TrimSuffix(msg, ".")
	if why == "" {
		return fmt.Sprintf("error: the Temporal worker%s: %s", run, msg)
	}
	return fmt.Sprintf("error: the Temporal worker%s: %s: %s", run, msg, why)
}
