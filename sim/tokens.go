package sim

import (
	"fmt"
	"strings"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// The vocabularies are immutable once built and cost ~0.4 s each, so they are built at most once per process and
// shared by every Server. tiktoken.SetBpeLoader sets a package global of that library; it is called once, before
// the first encoding is built, so no vocabulary is ever downloaded.
var (
	useOfflineLoader = sync.OnceFunc(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	loadCL100K       = sync.OnceValues(func() (*tiktoken.Tiktoken, error) { return loadEncoding("cl100k_base") })
	loadO200K        = sync.OnceValues(func() (*tiktoken.Tiktoken, error) { return loadEncoding("o200k_base") })
)

func loadEncoding(name string) (*tiktoken.Tiktoken, error) {
	useOfflineLoader()
	enc, err := tiktoken.GetEncoding(name)
	if err != nil {
		return nil, fmt.Errorf("sim: load tokenizer %s: %w", name, err)
	}
	return enc, nil
}

// EncodingFor returns the tiktoken encoding the simulator uses to count tokens for model: o200k_base for the
// GPT-4o/4.1/4.5/5 and o-series families, cl100k_base for everything else (including made-up names).
func EncodingFor(model string) string {
	if e, ok := tiktoken.MODEL_TO_ENCODING[model]; ok && (e == "o200k_base" || e == "cl100k_base") {
		return e
	}
	for _, p := range [...]string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4"} {
		if strings.HasPrefix(model, p) {
			return "o200k_base"
		}
	}
	return "cl100k_base"
}

// maxCachedText bounds the texts whose counts are remembered; longer ones are rare and counted each time.
const (
	maxCachedText   = 8 << 10
	maxCacheEntries = 16 << 10
)

// tokenCounter counts tokens with one encoding and remembers the counts of recent texts: a grid repeats the same
// instructions, questions and answers many times, and BPE encoding costs ~100 µs per prompt.
type tokenCounter struct {
	load func() (*tiktoken.Tiktoken, error)

	mu    sync.Mutex
	cache map[string]int
}

func newTokenCounter(load func() (*tiktoken.Tiktoken, error)) *tokenCounter {
	return &tokenCounter{load: load, cache: make(map[string]int)}
}

func (t *tokenCounter) count(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	cacheable := len(s) <= maxCachedText
	if cacheable {
		t.mu.Lock()
		n, ok := t.cache[s]
		t.mu.Unlock()
		if ok {
			return n, nil
		}
	}
	enc, err := t.load()
	if err != nil {
		return 0, err
	}
	n := len(enc.EncodeOrdinary(s))
	if cacheable {
		t.mu.Lock()
		if len(t.cache) >= maxCacheEntries {
			clear(t.cache)
		}
		t.cache[s] = n
		t.mu.Unlock()
	}
	return n, nil
}

// pieces returns the texts of the tokens of s, in order: they join back to s. A token may hold part of a
// multi-byte character.
func (t *tokenCounter) pieces(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	enc, err := t.load()
	if err != nil {
		return nil, err
	}
	toks := enc.EncodeOrdinary(s)
	out := make([]string, len(toks))
	for i, tok := range toks {
		out[i] = enc.Decode([]int{tok})
	}
	return out, nil
}

// replyTokens counts the tokens of a reply: its text's, except that the label, however the encoding would split
// it, is one token (the digits and letters that enumerate options are one token anyway; an option id in a JSON
// answer may not be). Counting it so keeps the label at one position of the logprobs.
func (t *tokenCounter) replyTokens(r reply) (int, error) {
	if r.labelAt < 0 {
		return t.count(r.text)
	}
	a, err := t.count(r.text[:r.labelAt])
	if err != nil {
		return 0, err
	}
	b, err := t.count(r.text[r.labelEnd:])
	if err != nil {
		return 0, err
	}
	return a + 1 + b, nil
}

// replyPieces returns the tokens of a reply as replyTokens counts them, and the index of the label's token (-1
// when the reply has no label).
func (t *tokenCounter) replyPieces(r reply) ([]string, int, error) {
	if r.labelAt < 0 {
		p, err := t.pieces(r.text)
		return p, -1, err
	}
	before, err := t.pieces(r.text[:r.labelAt])
	if err != nil {
		return nil, 0, err
	}
	after, err := t.pieces(r.text[r.labelEnd:])
	if err != nil {
		return nil, 0, err
	}
	out := make([]string, 0, len(before)+1+len(after))
	out = append(append(append(out, before...), r.label()), after...)
	return out, len(before), nil
}

// Chat accounting as in OpenAI's cookbook ("How to count tokens with tiktoken"): every message costs 3 tokens
// plus its role, content and name (a name costs 1 more), and every reply is primed with 3 tokens.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	tokensPerReply   = 3
)

// chatMessage is the part of a chat message the simulator reads.
type chatMessage struct {
	Role, Name, Content string
}

func (t *tokenCounter) chatPromptTokens(msgs []chatMessage) (int, error) {
	total := tokensPerReply
	for _, m := range msgs {
		total += tokensPerMessage
		for _, s := range [...]string{m.Role, m.Content, m.Name} {
			n, err := t.count(s)
			if err != nil {
				return 0, err
			}
			total += n
		}
		if m.Name != "" {
			total += tokensPerName
		}
	}
	return total, nil
}
