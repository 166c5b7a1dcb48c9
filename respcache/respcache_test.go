package respcache

import (
	"context"
	"crypto/sha256"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
)

func ptr(v float64) *float64 { return &v }

func baseRequest() llm.Request {
	return llm.Request{
		Model:    "gpt-4o-mini",
		Messages: []experiment.Message{{Role: "system", Content: "You are P1."}, {Role: "user", Content: "Q1"}},
		Seed:     42,
		Params:   experiment.Params{Temperature: ptr(0), MaxTokens: 16},
		CellID:   "m/42/q1/p1",
	}
}

func TestKeyCoversEverythingThatDecidesTheAnswer(t *testing.T) {
	const ep = "https://api.openai.com/v1"
	base := Key(ep, baseRequest())
	if Key(ep, baseRequest()) != base {
		t.Fatal("Key is not deterministic")
	}
	sameAnswer := baseRequest()
	sameAnswer.CellID = "other/cell"
	if Key(ep, sameAnswer) != base {
		t.Fatal("the cell id changed the key: two cells sending one request must share its answer")
	}
	changes := map[string]func(*llm.Request) string{
		"endpoint": func(*llm.Request) string { return "http://localhost:11434/v1" },
		"model":    func(r *llm.Request) string { r.Model = "gpt-4o"; return ep },
		"message":  func(r *llm.Request) string { r.Messages[1].Content = "Q2"; return ep },
		"role":     func(r *llm.Request) string { r.Messages[0].Role = "user"; return ep },
		"history": func(r *llm.Request) string {
			r.Messages = append(r.Messages, experiment.Message{Role: "assistant", Content: "3"})
			return ep
		},
		"seed":        func(r *llm.Request) string { r.Seed = 43; return ep },
		"temperature": func(r *llm.Request) string { r.Params.Temperature = ptr(0.7); return ep },
		"no temp":     func(r *llm.Request) string { r.Params.Temperature = nil; return ep },
		"top_p":       func(r *llm.Request) string { r.Params.TopP = ptr(0.9); return ep },
		"max_tokens":  func(r *llm.Request) string { r.Params.MaxTokens = 17; return ep },
		"stop":        func(r *llm.Request) string { r.Params.Stop = []string{"\n"}; return ep },
	}
	seen := map[store.CacheKey]string{base: "base"}
	for name, change := range changes {
		r := baseRequest()
		k := Key(change(&r), r)
		if other, dup := seen[k]; dup {
			t.Errorf("changing the %s gives the key of %s", name, other)
		}
		seen[k] = name
	}
}

// A picture is keyed by the digest of its bytes: changed bytes are another key under either transport, while the
// same bytes sent inline or by URL are one key.
func TestKeyOfPictures(t *testing.T) {
	const ep = "https://api.openai.com/v1"
	withImage := func(ref, sha, detail string) llm.Request {
		r := baseRequest()
		r.Messages[1].Images = []string{ref}
		r.ImageSHA256 = []string{sha}
		r.ImageDetail = detail
		return r
	}
	byURL := Key(ep, withImage("https://img.test/a.png", "aaaa", "auto"))
	inline := Key(ep, withImage("data:image/png;base64,AAAA", "aaaa", "auto"))
	if byURL != inline {
		t.Error("the same bytes by URL and inline give different keys")
	}
	for name, r := range map[string]llm.Request{
		"no picture":     baseRequest(),
		"changed bytes":  withImage("https://img.test/a.png", "bbbb", "auto"),
		"changed inline": withImage("data:image/png;base64,BBBB", "bbbb", "auto"),
		"another detail": withImage("https://img.test/a.png", "aaaa", "low"),
		"another message": func() llm.Request {
			r := withImage("x", "aaaa", "auto")
			r.Messages[0].Images, r.Messages[1].Images = r.Messages[1].Images, nil
			return r
		}(),
	} {
		if Key(ep, r) == byURL {
			t.Errorf("%s: same key as the original picture", name)
		}
	}
	if Key(ep, baseRequest()) != Key(ep, func() llm.Request { r := baseRequest(); r.ImageDetail = "high"; return r }()) {
		t.Error("a detail without pictures changed the key")
	}
}

func TestEndpoint(t *testing.T) {
	for _, c := range []struct {
		m    experiment.Model
		want string
	}{
		{experiment.Model{Provider: "sim"}, SimEndpoint},
		{experiment.Model{Provider: "sim", BaseURL: "http://127.0.0.1:8089/v1"}, "http://127.0.0.1:8089/v1"},
		{experiment.Model{}, "https://api.openai.com/v1"},
		{experiment.Model{Provider: "openai", BaseURL: "HTTPS://API.OpenAI.com:443/v1/"}, "https://api.openai.com/v1"},
		{experiment.Model{BaseURL: "http://LocalHost:80/v1//"}, "http://localhost/v1"},
		{experiment.Model{BaseURL: "http://localhost:11434/v1"}, "http://localhost:11434/v1"},
		{experiment.Model{Provider: "anthropic"}, "anthropic https://api.anthropic.com/v1"},
		{experiment.Model{Provider: "anthropic", BaseURL: "http://127.0.0.1:8089/v1/"}, "anthropic http://127.0.0.1:8089/v1"},
	} {
		if got := Endpoint(c.m); got != c.want {
			t.Errorf("Endpoint(%+v) = %q, want %q", c.m, got, c.want)
		}
	}
}

// An answer with a finish reason and logprobs comes back whole, and an entry of the layout without them (every
// entry written before finish reasons were kept) still reads, with an unknown finish reason. A second-layout entry
// whose lengths point past its end is invalid, never a wrong answer.
func TestEntryKeepsFinishReasonAndLogprobs(t *testing.T) {
	k := Key("sim", baseRequest())
	a := Answer{Text: "3. Neutral", PromptTokens: 40, CompletionTokens: 3, FinishReason: llm.FinishLength,
		Logprobs: []llm.TokenLogprob{{Token: "3", Logprob: -0.25, Top: []llm.TopLogprob{{Token: "3", Logprob: -0.25}, {Token: " 4", Logprob: -1.5}}}}}
	e := Entry(k, "m", "run-1", a, time.Now())
	if e.Value[0] != entryWithFinish {
		t.Fatalf("layout %d, want %d", e.Value[0], entryWithFinish)
	}
	got, err := Read(e, k)
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("Read = %+v, %v; want %+v", got, err, a)
	}
	plain := Entry(k, "m", "run-1", Answer{Text: "3", PromptTokens: 40, CompletionTokens: 1}, time.Now())
	if plain.Value[0] != version {
		t.Fatalf("an answer without finish reason or logprobs has layout %d, want %d", plain.Value[0], version)
	}
	if got, err := Read(plain, k); err != nil || got.FinishReason != "" || got.Text != "3" {
		t.Fatalf("Read of the first layout = %+v, %v", got, err)
	}
	cut := e
	cut.Value = e.Value[:headerSize+3] // the finish reason's length, and nothing after it
	cut.Sum = sumOf(cut.Value)
	if _, err := Read(cut, k); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Read of a cut entry = %v, want ErrInvalid", err)
	}
}

// An answer with provenance keeps it through the cache (the third layout), an answer without it is written in
// the older layouts as before (so entries of older versions and of this one read alike), an older reader finds a
// first byte it refuses (it reads only the first two layouts, by their first byte: a miss, never a misread), and
// a third-layout entry cut inside its provenance is invalid.
func TestEntryKeepsProvenance(t *testing.T) {
	k := Key("sim", baseRequest())
	a := Answer{Text: "3. Neutral", PromptTokens: 40, CompletionTokens: 3, FinishReason: llm.FinishStop,
		ServedModel: "gpt-4o-mini-2024-07-18", SystemFingerprint: "fp_44709d6fcb"}
	e := Entry(k, "m", "run-1", a, time.Now())
	if e.Value[0] != entryWithProvenance {
		t.Fatalf("layout %d, want %d", e.Value[0], entryWithProvenance)
	}
	if e.Value[0] == version || e.Value[0] == entryWithFinish {
		t.Fatalf("layout %d is one an older reader would decode without the provenance", e.Value[0])
	}
	got, err := Read(e, k)
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("Read = %+v, %v; want %+v", got, err, a)
	}
	onlyFP := Answer{Text: "3", SystemFingerprint: "fp_x"}
	if got, err := Read(Entry(k, "m", "run-1", onlyFP, time.Now()), k); err != nil || !reflect.DeepEqual(got, onlyFP) {
		t.Fatalf("Read of a fingerprint alone = %+v, %v", got, err)
	}
	old := a
	old.ServedModel, old.SystemFingerprint = "", ""
	if e2 := Entry(k, "m", "run-1", old, time.Now()); e2.Value[0] != entryWithFinish {
		t.Fatalf("an answer without provenance has layout %d, want %d", e2.Value[0], entryWithFinish)
	} else if got, err := Read(e2, k); err != nil || got.ServedModel != "" || got.Text != a.Text {
		t.Fatalf("Read of the second layout = %+v, %v", got, err)
	}
	cut := e
	cut.Value = e.Value[:headerSize+2+1+len(a.FinishReason)+1+1+3] // into the served model
	cut.Sum = sumOf(cut.Value)
	if _, err := Read(cut, k); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Read of an entry cut in its served model = %v, want ErrInvalid", err)
	}
}

func TestReadValidatesTheEntry(t *testing.T) {
	k := Key("sim", baseRequest())
	a := Answer{Text: "3", PromptTokens: 40, CompletionTokens: 1}
	e := Entry(k, "gpt-4o-mini", "run-1", a, time.Now())
	if got, err := Read(e, k); err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("Read = %+v, %v; want %+v", got, err, a)
	}
	flipped := e
	flipped.Value = append([]byte(nil), e.Value...)
	flipped.Value[len(flipped.Value)/2] ^= 0x20
	moved := Entry(Key("sim", llm.Request{Model: "x"}), "x", "run-1", a, time.Now())
	moved.Key = k // the row's key column rewritten
	garbage := e
	garbage.Value = []byte("not an entry")
	garbage.Sum = sumOf(garbage.Value)
	badText := Entry(k, "gpt-4o-mini", "run-1", Answer{Text: "\xff\xfe"}, time.Now())
	truncated := e
	truncated.Value = e.Value[:headerSize+1]
	truncated.Sum = sumOf(truncated.Value)
	for name, bad := range map[string]store.CacheEntry{"flipped byte": flipped, "other key": moved, "garbage": garbage,
		"not UTF-8": badText, "truncated": truncated} {
		if _, err := Read(bad, k); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Read error = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := Read(e, Key("sim", llm.Request{Model: "y"})); !errors.Is(err, ErrInvalid) {
		t.Errorf("Read under another key: %v, want ErrInvalid", err)
	}
}

type mapGetter map[store.CacheKey]store.CacheEntry

func (m mapGetter) CacheGet(_ context.Context, keys []store.CacheKey) ([]store.CacheEntry, error) {
	var out []store.CacheEntry
	for _, k := range keys {
		if e, ok := m[k]; ok {
			out = append(out, e)
		}
	}
	return out, nil
}

func TestLookupSplitsHitsMissesAndInvalid(t *testing.T) {
	r1, r2, r3 := baseRequest(), baseRequest(), baseRequest()
	r2.Seed, r3.Seed = 2, 3
	k1, k2, k3 := Key("sim", r1), Key("sim", r2), Key("sim", r3)
	good := Entry(k1, "m", "run", Answer{Text: "1"}, time.Now())
	bad := Entry(k2, "m", "run", Answer{Text: "2"}, time.Now())
	bad.Sum[0] ^= 1
	f, err := Lookup(context.Background(), mapGetter{k1: good, k2: bad}, []store.CacheKey{k1, k2, k3})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Answers) != 1 || f.Answers[k1].Text != "1" {
		t.Fatalf("Answers = %+v, want only %s", f.Answers, k1)
	}
	if len(f.Invalid) != 1 || f.Invalid[k2] == nil {
		t.Fatalf("Invalid = %+v, want only %s", f.Invalid, k2)
	}
}

func sumOf(b []byte) [32]byte { return sha256.Sum256(b) }

// TestKeysOfExistingEndpointsAreStable: the keys of OpenAI-format and simulator endpoints are what they were
// before provider anthropic existed, so every entry a store holds still answers its request.
func TestKeysOfExistingEndpointsAreStable(t *testing.T) {
	for _, c := range []struct {
		m    experiment.Model
		want string
	}{
		{experiment.Model{}, "fab991343d1c65084fba45158903e80c6f23f74213c90206be1c4d074713cb8d"},
		{experiment.Model{Provider: "sim"}, "828a8b54640a0d1c8b533736e1ff1983e9c960887970a87dc9a386eed9f2034a"},
		{experiment.Model{Provider: "openai", BaseURL: "http://localhost:11434/v1"}, "5424d40776f0d3f8e670308cc569eb591094afd29d90b689e7c217b40cc275dd"},
	} {
		if got := Key(Endpoint(c.m), baseRequest()).String(); got != c.want {
			t.Errorf("key of %+v: %s, want %s as before", c.m, got, c.want)
		}
	}
	anthropic := Key(Endpoint(experiment.Model{Provider: "anthropic", BaseURL: llm.DefaultOpenAIBaseURL}), baseRequest())
	if anthropic == Key(Endpoint(experiment.Model{}), baseRequest()) {
		t.Error("an anthropic model shares the key of an OpenAI-format model at the same URL")
	}
}
