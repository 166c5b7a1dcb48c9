package experiment

import (
	"reflect"
	"strings"
	"testing"
)

func withPictures() *Spec {
	s := minimalSpec()
	s.Personas[0].Images = []string{"https://img.test/ann.png"}
	s.Questionnaire.Items[1].Images = []string{"https://img.test/q2.png", "http://localhost:8080/q2b.png"}
	s.ApplyDefaults()
	return s
}

func TestImageSettings(t *testing.T) {
	s := withPictures()
	if s.Image.MaxConcurrentDownloads != DefaultMaxConcurrentDownloads || s.Image.OnFailure != ImageRaise || s.Image.Detail != ImageDetailAuto {
		t.Errorf("defaults = %+v", s.Image)
	}
	minimal := minimalSpec()
	minimal.ApplyDefaults()
	if minimal.Image != (ImageSettings{}) {
		t.Errorf("a spec without pictures got image settings %+v (they would change its hash)", minimal.Image)
	}
	if got := s.ImageTransport(s.Models[0]); got != ImageInline {
		t.Errorf("default transport %q, want inline", got)
	}
	s.Run.ImageTransport = ImageURL
	s.Models[1].ImageTransport = ImageInline
	if a, b := s.ImageTransport(s.Models[0]), s.ImageTransport(s.Models[1]); a != ImageURL || b != ImageInline {
		t.Errorf("transports %q, %q; want the run's, then the model's own", a, b)
	}
	s.Run.ImageTransport, s.Image.OnFailure, s.Image.Detail = "ftp", "retry", "max"
	s.Questionnaire.Items[0].Images = []string{"http://img.test/a.png", "data:text/plain;base64,AA=="}
	err := s.Validate()
	for _, want := range []string{"run.image_transport: unknown transport \"ftp\"", "image.on_failure: unknown policy \"retry\"",
		"image.detail: unknown detail \"max\"", "questionnaire.items[0].images[0]: \"http://img.test/a.png\" is plain http",
		"questionnaire.items[0].images[1]: a data URL must be data:image/"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v\nwant %q", err, want)
		}
	}
}

// Pictures go on user messages: the persona's where {persona_description} is, when that is a user message, else
// with the item's on the last user message; in cumulative mode after the history.
func TestRenderPictures(t *testing.T) {
	s := withPictures()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Render(Cell{Item: 1, Persona: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"https://img.test/ann.png", "https://img.test/q2.png", "http://localhost:8080/q2b.png"}
	if len(msgs[0].Images) != 0 || !reflect.DeepEqual(msgs[1].Images, want) {
		t.Errorf("default prompt (persona in the system message): %q / %q, want none / %q", msgs[0].Images, msgs[1].Images, want)
	}
	s.Prompt = Prompt{Type: PromptChat, Messages: []Message{
		{Role: RoleSystem, Content: "{general_instruction}"},
		{Role: RoleUser, Content: "You are {persona_description}"},
		{Role: RoleAssistant, Content: "OK"},
		{Role: RoleUser, Content: "{question}"},
	}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	msgs, _ = s.Render(Cell{Item: 1, Persona: 0}, nil)
	if !reflect.DeepEqual(msgs[1].Images, want[:1]) || !reflect.DeepEqual(msgs[3].Images, want[1:]) {
		t.Errorf("persona in a user message: %q / %q", msgs[1].Images, msgs[3].Images)
	}
	msgs, _ = s.Render(Cell{Item: 1, Persona: 0}, []Turn{{User: "Q1", Assistant: "1"}})
	if len(msgs) != 6 || !reflect.DeepEqual(msgs[3].Images, want[:1]) || !reflect.DeepEqual(msgs[5].Images, want[1:]) || msgs[1].Images != nil {
		t.Errorf("with a history: %d messages, pictures %q / %q / history %q", len(msgs), msgs[3].Images, msgs[5].Images, msgs[1].Images)
	}
	if msgs, _ := s.Render(Cell{Item: 0, Persona: 1}, nil); msgs[1].Images != nil || msgs[3].Images != nil {
		t.Errorf("a cell without pictures carries %q / %q", msgs[1].Images, msgs[3].Images)
	}
}
