package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/silicolab/silico/specfile"
)

// strict decodes b into a T, refusing unknown keys and trailing data: a key a recorded payload carries and its
// Go type lacks is a field removed or renamed while histories still hold it.
func strict[T any](b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var v T
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("%T: %w", v, err)
	}
	if d.More() {
		return fmt.Errorf("%T: data after the value", v)
	}
	return nil
}

// strictInput decodes a workflow input: its control keys strictly into the control part, its spec keys (if any)
// with the spec files' strict decoder.
func strictInput(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("workflow input: %w", err)
	}
	ctl := map[string]json.RawMessage{}
	spec := false
	for k, v := range obj {
		if slices.Contains(InputControlKeys(), k) {
			ctl[k] = v
		} else {
			spec = true
		}
	}
	cb, err := json.Marshal(ctl)
	if err != nil {
		return err
	}
	if err := strict[inputControl](cb); err != nil {
		return err
	}
	if spec {
		if _, err := specfile.ParseInput(b, "recorded workflow input", InputControlKeys()...); err != nil {
			return err
		}
	}
	return nil
}

// activityCodec decodes an activity's input and its result strictly into its handle's types.
type activityCodec struct{ in, out func([]byte) error }

func codecOf[I, O any](Activity[I, O]) activityCodec {
	return activityCodec{in: strict[I], out: strict[O]}
}

// codecs has every activity handle, by its name.
func codecs() map[string]activityCodec {
	return map[string]activityCodec{
		PrepareRun.Name:     codecOf(PrepareRun),
		RunSeedPass.Name:    codecOf(RunSeedPass),
		FailUnfinished.Name: codecOf(FailUnfinished),
		ExportResults.Name:  codecOf(ExportResults),
		CheckOutput.Name:    codecOf(CheckOutput),
		PlanBatchPass.Name:  codecOf(PlanBatchPass),
		SubmitBatch.Name:    codecOf(SubmitBatch),
		PollBatch.Name:      codecOf(PollBatch),
		AwaitBatch.Name:     codecOf(AwaitBatch),
		CancelBatch.Name:    codecOf(CancelBatch),
		CollectBatch.Name:   codecOf(CollectBatch),
		// No recorded history has an ambiguous Anthropic submission yet.
		CollectCandidates.Name: codecOf(CollectCandidates),
		CleanupBatch.Name:      codecOf(CleanupBatch),
	}
}

// The parts of a history file's JSON (as `temporal workflow show --output json` and the SDK write it) that carry
// payloads.
type (
	historyFile struct {
		Events []historyEvent `json:"events"`
	}
	payloads struct {
		Payloads []struct {
			Metadata map[string]string `json:"metadata"`
			Data     string            `json:"data"`
		} `json:"payloads"`
	}
	historyEvent struct {
		EventID   string `json:"eventId"`
		EventType string `json:"eventType"`
		Started   *struct {
			WorkflowType struct{ Name string } `json:"workflowType"`
			Input        payloads              `json:"input"`
		} `json:"workflowExecutionStartedEventAttributes"`
		ContinuedAsNew *struct {
			WorkflowType struct{ Name string } `json:"workflowType"`
			Input        payloads              `json:"input"`
		} `json:"workflowExecutionContinuedAsNewEventAttributes"`
		Completed *struct {
			Result payloads `json:"result"`
		} `json:"workflowExecutionCompletedEventAttributes"`
		Signaled *struct {
			SignalName string   `json:"signalName"`
			Input      payloads `json:"input"`
		} `json:"workflowExecutionSignaledEventAttributes"`
		Scheduled *struct {
			ActivityType struct{ Name string } `json:"activityType"`
			Input        payloads              `json:"input"`
		} `json:"activityTaskScheduledEventAttributes"`
		ActivityCompleted *struct {
			ScheduledEventID string   `json:"scheduledEventId"`
			Result           payloads `json:"result"`
		} `json:"activityTaskCompletedEventAttributes"`
	}
)

// readHistory reads the history file f.
func readHistory(t *testing.T, f string) historyFile {
	t.Helper()
	var h historyFile
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// data is the JSON of each payload; a payload that is not JSON fails the test.
func (p payloads) data(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	for _, pl := range p.Payloads {
		enc, err := base64.StdEncoding.DecodeString(pl.Metadata["encoding"])
		if err != nil || string(enc) != "json/plain" {
			t.Fatalf("a payload of encoding %q (%v), want json/plain", enc, err)
		}
		b, err := base64.StdEncoding.DecodeString(pl.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestRecordedPayloadsDecode decodes every payload of the recorded histories in workflows/testdata into its type
// in this package, refusing unknown keys: the workflow's inputs (started and continued as new), its results, the
// outage signals, and each activity's inputs and results by activity type. A field removed or renamed while a
// history still carries it, or an activity type without a handle, fails here.
func TestRecordedPayloadsDecode(t *testing.T) {
	files, err := filepath.Glob("../workflows/testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded histories in ../workflows/testdata")
	}
	cs := codecs()
	seen := map[string]int{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			h := readHistory(t, f)
			scheduled := map[string]string{} // event id → activity type
			check := func(e historyEvent, what string, decode func([]byte) error, p payloads) {
				t.Helper()
				for _, d := range p.data(t) {
					seen[what]++
					if err := decode(d); err != nil {
						t.Errorf("event %s (%s): %v\n%s", e.EventID, what, err, d)
					}
				}
			}
			for _, e := range h.Events {
				switch {
				case e.Started != nil:
					if e.Started.WorkflowType.Name != WorkflowType {
						t.Fatalf("workflow type %q, want %q", e.Started.WorkflowType.Name, WorkflowType)
					}
					check(e, "workflow input", strictInput, e.Started.Input)
				case e.ContinuedAsNew != nil:
					check(e, "continue-as-new input", strictInput, e.ContinuedAsNew.Input)
				case e.Completed != nil:
					check(e, "workflow result", strict[Result], e.Completed.Result)
				case e.Signaled != nil:
					switch e.Signaled.SignalName {
					case SignalOutage:
						check(e, "signal "+SignalOutage, strict[Outage], e.Signaled.Input)
					case SignalPause:
						check(e, "signal "+SignalPause, strict[Pause], e.Signaled.Input)
					default:
						t.Fatalf("event %s: signal %q has no wire type", e.EventID, e.Signaled.SignalName)
					}
				case e.Scheduled != nil:
					name := e.Scheduled.ActivityType.Name
					c, ok := cs[name]
					if !ok {
						t.Fatalf("event %s: activity type %q has no handle in wire", e.EventID, name)
					}
					scheduled[e.EventID] = name
					check(e, name+" input", c.in, e.Scheduled.Input)
				case e.ActivityCompleted != nil:
					name := scheduled[e.ActivityCompleted.ScheduledEventID]
					check(e, name+" result", cs[name].out, e.ActivityCompleted.Result)
				}
			}
		})
	}
	// The histories hold each kind of payload; a history file whose format this test misreads decodes nothing.
	for _, what := range []string{"workflow input", "continue-as-new input", "workflow result", "signal outage", "signal pause",
		"PrepareRun input", "PrepareRun result", "RunSeedPass input", "RunSeedPass result", "FailUnfinished input",
		"FailUnfinished result", "ExportResults input", "ExportResults result", "PlanBatchPass input",
		"PlanBatchPass result", "SubmitBatch input", "SubmitBatch result", "PollBatch input", "PollBatch result",
		"AwaitBatch input", "AwaitBatch result", "CollectBatch input", "CollectBatch result", "CleanupBatch input"} {
		if seen[what] == 0 {
			t.Errorf("no %s in the recorded histories", what)
		}
	}
}
