package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name, format, level string
		wantErr             bool
	}{
		{name: "json info", format: "json", level: "info"},
		{name: "console debug", format: "console", level: "debug"},
		{name: "default level", format: "json", level: ""},
		{name: "bad format", format: "xml", level: "info", wantErr: true},
		{name: "bad level", format: "json", level: "loud", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.format, tt.level, &bytes.Buffer{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(%q, %q) error = %v, want error %v", tt.format, tt.level, err, tt.wantErr)
			}
		})
	}
}

func TestNewLevelFilters(t *testing.T) {
	var buf bytes.Buffer
	z, err := New("json", "warn", &buf)
	if err != nil {
		t.Fatal(err)
	}
	z.Info("hidden")
	z.Warn("shown")
	if got := buf.String(); strings.Contains(got, "hidden") || !strings.Contains(got, "shown") {
		t.Fatalf("warn-level logger wrote %q, want only the warn entry", got)
	}
}

func TestNewConsole(t *testing.T) {
	var buf bytes.Buffer
	z, err := New("console", "info", &buf)
	if err != nil {
		t.Fatal(err)
	}
	z.Info("hello")
	if got := buf.String(); !strings.Contains(got, "INFO") || !strings.Contains(got, "hello") {
		t.Fatalf("console output %q, want level and message", got)
	}
}

// decode parses the single JSON entry in buf.
func decode(t *testing.T, buf *bytes.Buffer) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &m); err != nil {
		t.Fatalf("decode %q: %v", buf.String(), err)
	}
	buf.Reset()
	return m
}

func TestTemporal(t *testing.T) {
	var buf bytes.Buffer
	z, err := New("json", "debug", &buf)
	if err != nil {
		t.Fatal(err)
	}
	l := Temporal(z)

	levels := []struct {
		log  func(string, ...any)
		want string
	}{
		{l.Debug, "debug"}, {l.Info, "info"}, {l.Warn, "warn"}, {l.Error, "error"},
	}
	for _, lv := range levels {
		lv.log("msg", "k", 1)
		m := decode(t, &buf)
		if m["level"] != lv.want || m["msg"] != "msg" || m["k"] != float64(1) {
			t.Errorf("entry %v, want level %q, msg and k=1", m, lv.want)
		}
		// The caller must be this file, not the adapter.
		if c, _ := m["caller"].(string); !strings.HasPrefix(c, "logging/logging_test.go:") {
			t.Errorf("caller = %q, want logging/logging_test.go:N", c)
		}
	}

	l.Info("odd", "k", "v", "dangling")
	if m := decode(t, &buf); m["k"] != "v" || m["!BADKEY"] != "dangling" {
		t.Errorf("odd keyvals entry %v, want k=v and !BADKEY=dangling", m)
	}

	l.Info("nonstring", 7, "seven", "err", errors.New("boom"))
	if m := decode(t, &buf); m["7"] != "seven" || m["err"] != "boom" {
		t.Errorf("entry %v, want 7=seven and err=boom", m)
	}
}

func TestTemporalWith(t *testing.T) {
	var buf bytes.Buffer
	z, err := New("json", "info", &buf)
	if err != nil {
		t.Fatal(err)
	}
	l := Temporal(z)
	wl, ok := l.(log.WithLogger)
	if !ok {
		t.Fatal("Temporal logger does not implement log.WithLogger")
	}
	child := wl.With("run", "r1")
	child.Info("child")
	if m := decode(t, &buf); m["run"] != "r1" {
		t.Errorf("child entry %v, want run=r1", m)
	}
	// With must not mutate the parent.
	l.Info("parent")
	if m := decode(t, &buf); m["run"] != nil {
		t.Errorf("parent entry %v carries the child's field", m)
	}
	// Helper-style wrappers can skip their own frame.
	helper := func(l log.Logger) { l.Info("via helper") }
	helper(l.(log.WithSkipCallers).WithCallerSkip(1))
	if m := decode(t, &buf); !strings.HasPrefix(m["caller"].(string), "logging/logging_test.go:") {
		t.Errorf("caller = %v, want logging/logging_test.go:N", m["caller"])
	}
}

// TestTemporalCanceledActivityIsNotAnError: the SDK's "Activity error." of an attempt that returned
// context.Canceled is a debug line, any other activity error stays an error.
func TestTemporalCanceledActivityIsNotAnError(t *testing.T) {
	var buf bytes.Buffer
	z, err := New("json", "info", &buf)
	if err != nil {
		t.Fatal(err)
	}
	l := Temporal(z)
	l.Error("Activity error.", "ActivityType", "RunSeedPass", "Error", fmt.Errorf("pass: %w", context.Canceled))
	if buf.Len() != 0 {
		t.Errorf("a cancelled attempt logged at info level: %s", buf.String())
	}
	l.Error("Activity error.", "ActivityType", "RunSeedPass", "Error", errors.New("disk full"))
	if !strings.Contains(buf.String(), `"level":"error"`) || !strings.Contains(buf.String(), "disk full") {
		t.Errorf("a failed attempt: %q, want an error line", buf.String())
	}

	buf.Reset()
	z, _ = New("json", "debug", &buf)
	Temporal(z).Error("Activity error.", "Error", context.Canceled)
	if !strings.Contains(buf.String(), `"level":"debug"`) || !strings.Contains(buf.String(), "Activity canceled.") {
		t.Errorf("at debug level: %q, want a debug line saying the activity was cancelled", buf.String())
	}
}

// TestOneLine: an SDK error entry becomes one line in silico's words with where the details are, an activity's
// failure naming the activity, the run and the attempt; the same error again and anything below error level are
// not shown.
func TestOneLine(t *testing.T) {
	var buf bytes.Buffer
	z := zap.New(OneLine(&buf, "state/starter.log"))
	l := Temporal(z).(log.WithLogger).With("WorkflowID", "run-1", "ActivityType", "RunSeedPass")
	l.Warn("Failed to poll for task.", "Error", errors.New("server restarting"))
	l.Error(sdkActivityError, "Attempt", 2, "Error", errors.New("store is closed"))
	l.Error(sdkActivityError, "Attempt", 2, "Error", errors.New("store is closed"))
	l.Error(sdkActivityError, "Attempt", 3, "Error", context.Canceled)
	z.Error("Workflow panic.", zap.String("Error", "nondeterministic"))
	want := "error: RunSeedPass of run run-1 failed (attempt 2): store is closed (details: state/starter.log)\n" +
		"error: the Temporal worker: Workflow panic: nondeterministic (details: state/starter.log)\n"
	if got := buf.String(); got != want {
		t.Fatalf("shown:\n%s\nwant:\n%s", got, want)
	}
}
