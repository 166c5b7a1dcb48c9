package llm

import (
	"fmt"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/silicolab/silico/experiment"
)

// Encodings the tokenizer uses.
const (
	EncodingO200K  = "o200k_base"
	EncodingCL100K = "cl100k_base"
)

// setLoaderOnce guards tiktoken.SetBpeLoader. The loader is a global of the tiktoken library (it has no other
// way to choose one), written without synchronization; setting it once, before any encoding is loaded, is the
// only race-free use. The offline loader reads vocabularies embedded in the binary, so nothing is downloaded at
// run time.
var setLoaderOnce sync.Once

// Tokenizer counts tokens as OpenAI models do, with vocabularies embedded in the binary (no download). An
// encoding is loaded on first use and then kept. It is safe for concurrent use; share one per process.
type Tokenizer struct {
	o200k, cl100k lazyEncoding
}

type lazyEncoding struct {
	name string
	once sync.Once
	enc  *tiktoken.Tiktoken
	err  error
}

func (l *lazyEncoding) get() (*tiktoken.Tiktoken, error) {
	l.once.Do(func() {
		l.enc, l.err = tiktoken.GetEncoding(l.name)
		if l.err != nil {
			l.err = fmt.Errorf("llm: load tokenizer %s: %w", l.name, l.err)
		}
	})
	return l.enc, l.err
}

// NewTokenizer returns a tokenizer using the offline vocabularies. It loads cl100k_base eagerly, so a broken
// build fails here rather than at the first count; o200k_base loads on first use.
func NewTokenizer() (*Tokenizer, error) {
	setLoaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	t := &Tokenizer{o200k: lazyEncoding{name: EncodingO200K}, cl100k: lazyEncoding{name: EncodingCL100K}}
	if _, err := t.cl100k.get(); err != nil {
		return nil, err
	}
	return t, nil
}

// EncodingFor names the encoding of a model: o200k_base for gpt-4o*, gpt-4.1*, o1*, o3*, o4* and gpt-5*,
// cl100k_base for everything else (gpt-4, gpt-3.5-turbo, embeddings, and the best guess for open models).
func EncodingFor(model string) string {
	for _, p := range []string{"gpt-4o", "gpt-4.1", "o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return EncodingO200K
		}
	}
	return EncodingCL100K
}

// Count is the number of tokens of text for model. Special-token markers such as "<|endoftext|>" count as the
// plain text they are, as the API counts them in message content. Should a vocabulary fail to load, Count falls
// back to an estimate of one token per four bytes.
func (t *Tokenizer) Count(model, text string) int {
	if text == "" {
		return 0
	}
	enc, err := t.encoding(model)
	if err != nil {
		return (len(text) + 3) / 4
	}
	return len(enc.EncodeOrdinary(text))
}

// Per-message overheads of OpenAI's chat format (the openai-cookbook "How to count tokens with tiktoken"
// accounting, valid for gpt-3.5-turbo-0613 and later, gpt-4*, gpt-4o* and later): every message costs three
// tokens besides its role and content, and every reply is primed with three more.
const (
	tokensPerMessage = 3
	tokensReplyPrime = 3
)

// CountMessages is the prompt size of a chat request, as OpenAI reports it in usage.prompt_tokens.
func (t *Tokenizer) CountMessages(model string, msgs []experiment.Message) int {
	n := tokensReplyPrime
	for _, m := range msgs {
		n += tokensPerMessage + t.Count(model, m.Role) + t.Count(model, m.Content)
	}
	return n
}

func (t *Tokenizer) encoding(model string) (*tiktoken.Tiktoken, error) {
	if EncodingFor(model) == EncodingO200K {
		return t.o200k.get()
	}
	return t.cl100k.get()
}
