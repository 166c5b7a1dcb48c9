package llm

import (
	"encoding/json"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// A message with pictures is sent as parts: its text, then an image_url part per picture with the detail.
func TestChatRequestWithPictures(t *testing.T) {
	req := chatRequest(Request{Model: "gpt-4o-mini", ImageDetail: "low", Messages: []experiment.Message{
		{Role: "system", Content: "Be honest."},
		{Role: "user", Content: "Rate this.", Images: []string{"https://img.test/a.png", "data:image/png;base64,AAAA"}},
	}})
	b, err := json.Marshal(req.Messages)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"system","content":"Be honest."},{"role":"user","content":[{"type":"text","text":"Rate this."},` +
		`{"type":"image_url","image_url":{"url":"https://img.test/a.png","detail":"low"}},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]}]`
	if got := string(b); got != want {
		t.Errorf("messages =\n%s\nwant\n%s", got, want)
	}
}
