package llm

import (
	"sync"
	"testing"

	"github.com/silicolab/silico/experiment"
)

func newTestTokenizer(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestEncodingFor(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4o": EncodingO200K, "gpt-4o-mini-2024-07-18": EncodingO200K, "gpt-4.1-nano": EncodingO200K,
		"o1": EncodingO200K, "o3-mini": EncodingO200K, "o4-mini": EncodingO200K, "gpt-5": EncodingO200K,
		"gpt-4": EncodingCL100K, "gpt-4-turbo": EncodingCL100K, "gpt-3.5-turbo": EncodingCL100K,
		"text-embedding-3-small": EncodingCL100K, "qwen2.5": EncodingCL100K, "": EncodingCL100K,
	} {
		if got := EncodingFor(model); got != want {
			t.Errorf("EncodingFor(%q) = %s, want %s", model, got, want)
		}
	}
}

// Known counts from tiktoken (Python) and the tiktoken-go tests.
func TestCount(t *testing.T) {
	tok := newTestTokenizer(t)
	tests := []struct {
		model, text string
		want        int
	}{
		{"gpt-4", "", 0},
		{"gpt-4", "hello world", 2},
		{"gpt-3.5-turbo", "tiktoken is great!", 6},
		{"gpt-4", "hello world!你好，世界！", 10},
		{"gpt-4", "antidisestablishmentarianism", 6},
		{"gpt-4o", "hello world", 2},
		// Special-token markers in content are plain text, never a panic.
		{"gpt-4", "<|endoftext|>", 7},
	}
	for _, tt := range tests {
		if got := tok.Count(tt.model, tt.text); got != tt.want {
			t.Errorf("Count(%q, %q) = %d, want %d", tt.model, tt.text, got, tt.want)
		}
	}
	// o200k really is used: its ids differ from cl100k's ("hello world" is [24912, 2375] in o200k_base).
	enc, err := tok.encoding("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	if ids := enc.EncodeOrdinary("hello world"); len(ids) != 2 || ids[0] != 24912 || ids[1] != 2375 {
		t.Errorf("o200k ids of \"hello world\" = %v, want [24912 2375]", ids)
	}
	// o200k is the larger vocabulary: multilingual text takes fewer tokens.
	const zh = "我们的问卷有二十个问题，每个问题有五个选项。"
	if o, c := tok.Count("gpt-4o", zh), tok.Count("gpt-4", zh); o >= c {
		t.Errorf("Count(gpt-4o) = %d, Count(gpt-4) = %d on Chinese text; want o200k smaller", o, c)
	}
}

func TestCountMessages(t *testing.T) {
	tok := newTestTokenizer(t)
	msgs := []experiment.Message{
		{Role: "system", Content: "You are a helpful assistant."},
		{Role: "user", Content: "hello world"},
	}
	// 3 (reply priming) + per message 3 + role + content:
	// system: 3 + 1 + 6 ("You are a helpful assistant.") ; user: 3 + 1 + 2.
	if got, want := tok.CountMessages("gpt-4", msgs), 3+(3+1+6)+(3+1+2); got != want {
		t.Errorf("CountMessages(gpt-4) = %d, want %d", got, want)
	}
	if got, want := tok.CountMessages("gpt-4o", nil), 3; got != want {
		t.Errorf("CountMessages(no messages) = %d, want %d", got, want)
	}
}

func TestTokenizerConcurrent(t *testing.T) {
	tok := newTestTokenizer(t)
	tok2 := newTestTokenizer(t) // a second constructor call is fine
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			model := "gpt-4"
			if i%2 == 0 {
				model = "gpt-4o"
			}
			if n := tok.Count(model, "hello world"); n != 2 {
				t.Errorf("Count = %d", n)
			}
			if n := tok2.Count(model, "hello world"); n != 2 {
				t.Errorf("Count = %d", n)
			}
		})
	}
	wg.Wait()
}
