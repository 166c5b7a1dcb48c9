package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// The wire shape silico reads, decoded independently of the simulator's own types.
type lpTop struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type lpToken struct {
	lpTop
	TopLogprobs []lpTop `json:"top_logprobs"`
}

type lpChoice struct {
	Index   int `json:"index"`
	Message struct {
		Content *string `json:"content"`
	} `json:"message"`
	Logprobs *struct {
		Content []lpToken `json:"content"`
	} `json:"logprobs"`
	FinishReason string `json:"finish_reason"`
}

type lpResponse struct {
	Choices []lpChoice `json:"choices"`
	Usage   usage      `json:"usage"`
}

// chat sends body to s without a network and returns the status and the raw response.
func chat(t *testing.T, s *Server, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(b)))
	return w.Code, w.Body.Bytes()
}

func chatOK(t *testing.T, s *Server, body any) lpResponse {
	t.Helper()
	code, raw := chat(t, s, body)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, raw)
	}
	var r lpResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return r
}

func chatBody(model string, seed int, prompt string, extra map[string]any) map[string]any {
	b := map[string]any{"model": model, "seed": seed, "messages": []map[string]string{
		{"role": "system", "content": "You are a 34 year old teacher from Ohio."},
		{"role": "user", "content": prompt}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func schemaFormat(enum []string, reason bool) map[string]any {
	props := map[string]any{"answer": map[string]any{"type": "string", "enum": enum}}
	req := []string{"answer"}
	if reason {
		props["reason"] = map[string]any{"type": "string"}
		req = append(req, "reason")
	}
	return map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "strict": true,
		"schema": map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}}}
}

const letterPrompt = "Which colour do you like best?\na) Red\nb) Green\nc) Blue\nd) Yellow\nReply with the letter."

// labelCase is a prompt and the labels its options are enumerated with.
type labelCase struct {
	name, prompt string
	labels       []string
}

var labelCases = []labelCase{
	{"digits", ipipPrompt, []string{"1", "2", "3", "4", "5"}},
	{"letters", letterPrompt, []string{"a", "b", "c", "d"}},
	{"capitals", "Question 1. Which?\nA. Red\nB. Green\nC. Blue\n", []string{"A", "B", "C"}},
	{"two", "Do you agree? 1) Yes 2) No", []string{"1", "2"}},
}

// optionOf maps a token at the label position to the label it spells (variants: a leading space, a trailing
// period, the other case), or "".
func optionOf(tok string, labels []string) string {
	t := strings.TrimSuffix(strings.TrimPrefix(tok, " "), ".")
	for _, l := range labels {
		if strings.EqualFold(t, l) {
			return l
		}
	}
	return ""
}

// checkLogprobs checks a choice's logprobs against the invariants silico relies on, and returns the index of the
// label's token: the first token, or the first after `{"answer":"` in a JSON answer (-1 when neither applies).
func checkLogprobs(t *testing.T, c lpChoice, completion, top int) int {
	t.Helper()
	if c.Logprobs == nil || c.Message.Content == nil {
		t.Fatalf("choice %+v: want content and logprobs", c)
	}
	toks := c.Logprobs.Content
	if len(toks) != completion {
		t.Errorf("%d logprobs tokens, completion_tokens %d: want one per token", len(toks), completion)
	}
	var joined strings.Builder
	for i, tk := range toks {
		joined.WriteString(tk.Token)
		if got := string(intsToBytes(tk.Bytes)); got != tk.Token {
			t.Errorf("token %d %q: bytes spell %q", i, tk.Token, got)
		}
		if !(tk.Logprob <= 0) || math.IsInf(tk.Logprob, 0) {
			t.Errorf("token %d %q: logprob %v, want finite and ≤ 0", i, tk.Token, tk.Logprob)
		}
		if len(tk.TopLogprobs) != top {
			t.Errorf("token %d: %d top_logprobs, want %d", i, len(tk.TopLogprobs), top)
		}
		var sum float64
		seen := map[string]bool{}
		found := false
		for j, a := range tk.TopLogprobs {
			if !(a.Logprob <= 0) || math.IsInf(a.Logprob, 0) {
				t.Errorf("token %d alternative %q: logprob %v, want finite and ≤ 0", i, a.Token, a.Logprob)
			}
			if j > 0 && a.Logprob > tk.TopLogprobs[j-1].Logprob {
				t.Errorf("token %d: top_logprobs not sorted: %v", i, tk.TopLogprobs)
			}
			if seen[a.Token] {
				t.Errorf("token %d: %q listed twice", i, a.Token)
			}
			seen[a.Token] = true
			if string(intsToBytes(a.Bytes)) != a.Token {
				t.Errorf("token %d alternative %q: bytes %v", i, a.Token, a.Bytes)
			}
			sum += math.Exp(a.Logprob)
			if a.Token == tk.Token {
				found = true
				if a.Logprob != tk.Logprob {
					t.Errorf("token %d %q: logprob %v, its top_logprobs entry %v", i, tk.Token, tk.Logprob, a.Logprob)
				}
			}
		}
		if sum > 1+1e-12 {
			t.Errorf("token %d: top_logprobs sum to probability %v > 1", i, sum)
		}
		if top > 0 && !found && tk.Logprob > tk.TopLogprobs[top-1].Logprob {
			t.Errorf("token %d %q (logprob %v) is likelier than the last of the top %d but not among them", i,
				tk.Token, tk.Logprob, top)
		}
	}
	if joined.String() != *c.Message.Content {
		t.Errorf("tokens join to %q, content %q", joined.String(), *c.Message.Content)
	}
	if !strings.HasPrefix(*c.Message.Content, "{") {
		return 0
	}
	var prefix strings.Builder
	for i, tk := range toks {
		if prefix.String() == `{"answer":"` {
			return i
		}
		prefix.WriteString(tk.Token)
	}
	return -1
}

func intsToBytes(v []int) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// TestLogprobsValid checks the logprobs of many requests (models, seeds, prompts, formats, top_logprobs): valid
// numbers, the label's position holding the options' labels with the written one first or second, a minority of
// requests whose likeliest label is not the written one, and mass left over for the rest of the vocabulary.
func TestLogprobsValid(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	labelsOf := func(lc labelCase, format string) (map[string]any, []string) {
		switch format {
		case "schema":
			return schemaFormat(lc.labels, false), lc.labels
		case "ids":
			ids := make([]string, len(lc.labels))
			for i := range ids {
				ids[i] = fmt.Sprintf("opt_%d", i+1)
			}
			return schemaFormat(ids, true), ids
		case "object":
			return map[string]any{"type": "json_object"}, lc.labels
		}
		return nil, lc.labels
	}
	variants := map[string]int{} // how often each kind of spelling is listed at a label position
	requests, disagree := 0, 0
	for _, model := range []string{"sim-chat", "gpt-4o-mini"} {
		for _, lc := range labelCases {
			for _, format := range []string{"plain", "schema", "ids", "object"} {
				for seed := range 25 {
					top := []int{0, 1, 5, 20}[seed%4]
					rf, labels := labelsOf(lc, format)
					extra := map[string]any{"logprobs": true, "top_logprobs": top}
					if rf != nil {
						extra["response_format"] = rf
					}
					resp := chatOK(t, s, chatBody(model, seed, lc.prompt, extra))
					c := resp.Choices[0]
					at := checkLogprobs(t, c, resp.Usage.CompletionTokens, top)
					if t.Failed() {
						t.Fatalf("%s %s %s seed %d: %s", model, lc.name, format, seed, *c.Message.Content)
					}
					if at < 0 || at >= len(c.Logprobs.Content) {
						t.Fatalf("%s %s %s seed %d: no label position in %q", model, lc.name, format, seed, *c.Message.Content)
					}
					pos := c.Logprobs.Content[at]
					if !slices.Contains(labels, pos.Token) {
						t.Fatalf("%s %s %s: token %q at the label position, want one of %v", lc.name, format,
							*c.Message.Content, pos.Token, labels)
					}
					if top < 2 {
						continue
					}
					requests++
					first, second := pos.TopLogprobs[0].Token, pos.TopLogprobs[1].Token
					if !slices.Contains(labels, first) {
						t.Errorf("%s %s seed %d: likeliest token %q is no label of %v", lc.name, format, seed, first, labels)
					}
					switch pos.Token {
					case first:
					case second:
						disagree++
					default:
						t.Errorf("%s %s seed %d: written label %q is neither first nor second in %v", lc.name, format,
							seed, pos.Token, pos.TopLogprobs)
					}
					if top < 20 {
						continue
					}
					var covered float64
					for _, a := range pos.TopLogprobs {
						l := optionOf(a.Token, labels)
						if l == "" {
							continue
						}
						covered += math.Exp(a.Logprob)
						switch a.Token {
						case l:
							variants["label"]++
						case " " + l:
							variants["space"]++
						case l + ".":
							variants["period"]++
						default:
							variants["case"]++
						}
					}
					if covered <= 0.5 || covered >= 1 {
						t.Errorf("%s %s seed %d: the options' labels cover %v of the mass, want (0.5, 1)", lc.name,
							format, seed, covered)
					}
				}
			}
		}
	}
	if share := float64(disagree) / float64(requests); share < 0.05 || share > 0.35 {
		t.Errorf("%d of %d requests have another label likeliest than the written one, want a minority near 1/6",
			disagree, requests)
	}
	for _, k := range []string{"label", "space", "period", "case"} {
		if variants[k] == 0 {
			t.Errorf("no %s variant of a label listed in any top_logprobs: %v", k, variants)
		}
	}
}

// TestLabelDistributionBounds checks the label distribution itself, with every candidate: probabilities positive,
// summing to less than 1, the written label first or second and always a label first.
func TestLabelDistributionBounds(t *testing.T) {
	for k := 1; k <= 12; k++ {
		labels := make([]string, k)
		for i := range labels {
			labels[i] = fmt.Sprint(i + 1)
		}
		for seed := range uint64(300) {
			r := rng{state: mix64(seed*31 + uint64(k))}
			chosen := int(seed) % k
			cands, _ := labelDistribution(&r, labels, chosen)
			var sum float64
			for _, c := range cands {
				if !(c.p > 0) {
					t.Fatalf("k %d seed %d: %q has probability %v", k, seed, c.token, c.p)
				}
				sum += c.p
			}
			if sum >= 1 {
				t.Errorf("k %d seed %d: candidates sum to %v, want < 1", k, seed, sum)
			}
			if !slices.Contains(labels, cands[0].token) {
				t.Errorf("k %d seed %d: likeliest %q is no label", k, seed, cands[0].token)
			}
			if w := labels[chosen]; cands[0].token != w && cands[1].token != w {
				t.Errorf("k %d seed %d: written %q not first or second: %v", k, seed, w, cands[:3])
			}
		}
	}
}

func TestLogprobsDeterministic(t *testing.T) {
	clk := newFakeClock()
	body := chatBody("sim-chat", 3, ipipPrompt, map[string]any{"logprobs": true, "top_logprobs": 7,
		"response_format": schemaFormat([]string{"1", "2", "3", "4", "5"}, true)})
	var bodies [][]byte
	for range 2 {
		s, err := New(Config{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		code, raw := chat(t, s, body)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, raw)
		}
		bodies = append(bodies, raw)
	}
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Errorf("one request, two bodies:\n%s\n%s", bodies[0], bodies[1])
	}
	s, err := New(Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	body["seed"] = 4
	if _, raw := chat(t, s, body); bytes.Equal(raw, bodies[0]) {
		t.Errorf("seeds 3 and 4 got the same body %s", raw)
	}
}

func TestJSONSchemaAnswer(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"vi", "mi", "n", "ma", "va"}
	for seed := range 20 {
		plain := chatOK(t, s, chatBody("sim-chat", seed, ipipPrompt, nil))
		label := optionLabel(*plain.Choices[0].Message.Content)
		for _, tc := range []struct {
			name   string
			enum   []string
			reason bool
			want   string
		}{
			{"labels", []string{"1", "2", "3", "4", "5"}, false, label},
			{"ids at the options' places", ids, true, ids[int(label[0]-'1')]},
			{"other count", []string{"x", "y"}, false, ""},
		} {
			resp := chatOK(t, s, chatBody("sim-chat", seed, ipipPrompt,
				map[string]any{"response_format": schemaFormat(tc.enum, tc.reason)}))
			content := *resp.Choices[0].Message.Content
			var got map[string]string
			if err := json.Unmarshal([]byte(content), &got); err != nil {
				t.Fatalf("%s: %q does not parse: %v", tc.name, content, err)
			}
			if !slices.Contains(tc.enum, got["answer"]) || tc.want != "" && got["answer"] != tc.want {
				t.Errorf("%s seed %d: answer %q, want %q (one of %v)", tc.name, seed, got["answer"], tc.want, tc.enum)
			}
			if _, has := got["reason"]; has != tc.reason || len(got) != 1+btoi(tc.reason) {
				t.Errorf("%s: %q, want answer%s and nothing else", tc.name, content, map[bool]string{true: " and reason"}[tc.reason])
			}
			if !strings.HasPrefix(content, `{"answer":"`) {
				t.Errorf("%s: %q does not start with the answer", tc.name, content)
			}
		}
	}
	// json_object: a JSON object too, with or without options in the prompt.
	for _, prompt := range []string{ipipPrompt, "How are you today?"} {
		resp := chatOK(t, s, chatBody("sim-chat", 1, prompt, map[string]any{"response_format": map[string]string{"type": "json_object"}}))
		var got map[string]any
		if err := json.Unmarshal([]byte(*resp.Choices[0].Message.Content), &got); err != nil || got["answer"] == nil {
			t.Errorf("json_object reply %q: %v, want an object with an answer", *resp.Choices[0].Message.Content, err)
		}
	}
	// {"type":"text"} is the plain answer.
	text := chatOK(t, s, chatBody("sim-chat", 1, ipipPrompt, map[string]any{"response_format": map[string]string{"type": "text"}}))
	plain := chatOK(t, s, chatBody("sim-chat", 1, ipipPrompt, nil))
	if *text.Choices[0].Message.Content != *plain.Choices[0].Message.Content {
		t.Errorf("text format %q, plain %q", *text.Choices[0].Message.Content, *plain.Choices[0].Message.Content)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestMaxTokensCutsLogprobs(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rf := range []any{nil, schemaFormat([]string{"1", "2", "3", "4", "5"}, true)} {
		full := chatOK(t, s, chatBody("sim-chat", 2, ipipPrompt, map[string]any{"logprobs": true, "top_logprobs": 3,
			"response_format": rf}))
		n := full.Usage.CompletionTokens
		for _, limit := range []int{1, 2, n - 1, n, n + 5} {
			for _, key := range []string{"max_tokens", "max_completion_tokens"} {
				resp := chatOK(t, s, chatBody("sim-chat", 2, ipipPrompt, map[string]any{"logprobs": true,
					"top_logprobs": 3, key: limit, "response_format": rf}))
				c := resp.Choices[0]
				want, finish := min(limit, n), "stop"
				if limit < n {
					finish = "length"
				}
				if resp.Usage.CompletionTokens != want || c.FinishReason != finish {
					t.Errorf("%s %d of %d: completion_tokens %d, finish %q; want %d, %q", key, limit, n,
						resp.Usage.CompletionTokens, c.FinishReason, want, finish)
				}
				checkLogprobs(t, c, want, 3)
				if !strings.HasPrefix(*full.Choices[0].Message.Content, *c.Message.Content) {
					t.Errorf("cut reply %q is no prefix of %q", *c.Message.Content, *full.Choices[0].Message.Content)
				}
				for i, tk := range c.Logprobs.Content {
					if fmt.Sprint(tk) != fmt.Sprint(full.Choices[0].Logprobs.Content[i]) {
						t.Errorf("token %d of the cut reply %+v, of the whole %+v", i, tk, full.Choices[0].Logprobs.Content[i])
					}
				}
			}
		}
	}
}

func TestFinishReasonFaults(t *testing.T) {
	plainServer, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	full := chatOK(t, plainServer, chatBody("sim-chat", 1, ipipPrompt, nil))

	s, err := New(Config{Faults: Faults{Length: 1}})
	if err != nil {
		t.Fatal(err)
	}
	resp := chatOK(t, s, chatBody("sim-chat", 1, ipipPrompt, map[string]any{"logprobs": true}))
	c := resp.Choices[0]
	if c.FinishReason != "length" || resp.Usage.CompletionTokens != 1 || len(c.Logprobs.Content) != 1 ||
		*c.Message.Content != optionLabel(*full.Choices[0].Message.Content) {
		t.Errorf("length fault: %q, finish %q, %d tokens; want the first token of %q, length, 1", *c.Message.Content,
			c.FinishReason, resp.Usage.CompletionTokens, *full.Choices[0].Message.Content)
	}
	// An embeddings call that draws the fault is answered as usual.
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/embeddings",
		strings.NewReader(`{"model":"text-embedding-3-small","input":"hello"}`)))
	if log := s.Requests(); w.Code != http.StatusOK || log[1].Fault != "" {
		t.Errorf("embeddings under the length fault: %d, fault %q; want 200 without a fault", w.Code, log[1].Fault)
	}

	s, err = New(Config{Faults: Faults{ContentFilter: 1}})
	if err != nil {
		t.Fatal(err)
	}
	code, raw := chat(t, s, chatBody("sim-chat", 1, ipipPrompt, map[string]any{"logprobs": true}))
	if code != http.StatusOK || !strings.Contains(string(raw), `"message":{"role":"assistant","content":null,"refusal":null}`) ||
		!strings.Contains(string(raw), `"logprobs":null,"finish_reason":"content_filter"`) {
		t.Errorf("content_filter fault: %d %s; want content null, finish_reason content_filter", code, raw)
	}
	if log := s.Requests(); log[0].Fault != FaultContentFilter || log[0].FinishReason != "content_filter" ||
		log[0].CompletionTokens != 0 {
		t.Errorf("log %+v, want the content_filter fault and finish reason, no completion tokens", log[0])
	}

	// At rates, deterministic per FaultSeed like the other faults, and counted.
	run := func(seed int64) (string, Counters) {
		s, err := New(Config{FaultSeed: seed, Faults: Faults{Length: 0.3, ContentFilter: 0.2, ServerError500: 0.1}})
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for i := range 200 {
			code, raw := chat(t, s, chatBody("sim-chat", i, ipipPrompt, nil))
			var r lpResponse
			if code == http.StatusOK && json.Unmarshal(raw, &r) == nil {
				reasons = append(reasons, r.Choices[0].FinishReason)
			} else {
				reasons = append(reasons, fmt.Sprint(code))
			}
		}
		return strings.Join(reasons, ","), s.Counters()
	}
	a, ca := run(5)
	b, _ := run(5)
	other, _ := run(6)
	if a != b || a == other {
		t.Errorf("finish reasons: seed 5 twice equal %v, seeds 5 and 6 differ %v; want both", a == b, a != other)
	}
	count := func(s, r string) int {
		return len(slices.DeleteFunc(strings.Split(s, ","), func(x string) bool { return x != r }))
	}
	for _, tc := range []struct {
		reason  string
		counter int64
		lo, hi  int
	}{{"length", ca.Length, 40, 80}, {"content_filter", ca.ContentFilter, 22, 58}, {"500", ca.ServerErrors, 8, 35},
		{"stop", ca.OK - ca.Length - ca.ContentFilter, 60, 140}} {
		if n := count(a, tc.reason); n < tc.lo || n > tc.hi || int64(n) != tc.counter {
			t.Errorf("%s: %d of 200 calls (counter %d), want %d..%d", tc.reason, n, tc.counter, tc.lo, tc.hi)
		}
	}
}

func TestChatParamErrors(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	schema := func(s map[string]any) map[string]any {
		return map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "a", "schema": s}}
	}
	for _, tc := range []struct {
		name  string
		extra map[string]any
		param string
	}{
		{"top_logprobs over 20", map[string]any{"logprobs": true, "top_logprobs": 21}, "top_logprobs"},
		{"negative top_logprobs", map[string]any{"logprobs": true, "top_logprobs": -1}, "top_logprobs"},
		{"top_logprobs without logprobs", map[string]any{"top_logprobs": 3}, "top_logprobs"},
		{"top_logprobs with logprobs false", map[string]any{"logprobs": false, "top_logprobs": 0}, "top_logprobs"},
		{"format a string", map[string]any{"response_format": "json"}, "response_format"},
		{"format without type", map[string]any{"response_format": map[string]any{}}, "response_format"},
		{"unknown type", map[string]any{"response_format": map[string]any{"type": "xml"}}, "response_format"},
		{"schema missing", map[string]any{"response_format": map[string]any{"type": "json_schema"}}, "response_format"},
		{"no name", map[string]any{"response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"schema": map[string]any{"type": "object"}}}}, "response_format"},
		{"strict not a bool", map[string]any{"response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "a", "strict": "yes", "schema": map[string]any{}}}}, "response_format"},
		{"schema not an object", map[string]any{"response_format": schema(nil)}, "response_format"},
		{"array schema", map[string]any{"response_format": schema(map[string]any{"type": "array"})}, "response_format"},
		{"no answer property", map[string]any{"response_format": schema(map[string]any{"type": "object",
			"properties": map[string]any{"choice": map[string]any{"type": "string"}}})}, "response_format"},
		{"empty enum", map[string]any{"response_format": schemaFormat([]string{}, false)}, "response_format"},
		{"numeric enum", map[string]any{"response_format": schema(map[string]any{"type": "object",
			"properties": map[string]any{"answer": map[string]any{"enum": []int{1, 2}}}})}, "response_format"},
		{"n 0", map[string]any{"n": 0}, "n"},
		{"n 129", map[string]any{"n": 129}, "n"},
		{"n 2 streamed", map[string]any{"n": 2, "stream": true}, "n"},
	} {
		code, raw := chat(t, s, chatBody("sim-chat", 1, ipipPrompt, tc.extra))
		var e errorBody
		if code != http.StatusBadRequest || json.Unmarshal(raw, &e) != nil || e.Error.Param == nil ||
			*e.Error.Param != tc.param || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
			t.Errorf("%s: %d %s; want 400 invalid_request_error with param %s", tc.name, code, raw, tc.param)
		}
	}
	// Every parameter above is accepted with a valid value.
	for _, extra := range []map[string]any{
		{"logprobs": true, "top_logprobs": 20}, {"logprobs": true, "top_logprobs": 0}, {"logprobs": true},
		{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "a",
			"schema": map[string]any{"properties": map[string]any{"answer": map[string]any{"type": "string"}}}}}},
		{"n": 1}, {"n": 128}, {"stream": true, "n": 1},
	} {
		if code, raw := chat(t, s, chatBody("sim-chat", 1, ipipPrompt, extra)); code != http.StatusOK {
			t.Errorf("%v: %d %s, want 200", extra, code, raw)
		}
	}
}

func TestIgnoredParamsAreLogged(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	base := chatOK(t, s, chatBody("sim-chat", 1, ipipPrompt, nil))
	resp := chatOK(t, s, chatBody("sim-chat", 1, ipipPrompt, map[string]any{"temperature": 0.7,
		"presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": map[string]int{"16": -100},
		"reasoning_effort": "low", "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1, "mirostat": 2}))
	if *resp.Choices[0].Message.Content != *base.Choices[0].Message.Content {
		t.Errorf("sampling parameters changed the answer: %q, without them %q", *resp.Choices[0].Message.Content,
			*base.Choices[0].Message.Content)
	}
	log := s.Requests()
	want := `temperature=0.7 presence_penalty=0.5 frequency_penalty=-0.5 logit_bias={"16":-100} reasoning_effort="low" ` +
		`top_k=40 min_p=0.05 repeat_penalty=1.1`
	if log[0].Ignored != "" || log[1].Ignored != want {
		t.Errorf("ignored %q then %q, want none then %q", log[0].Ignored, log[1].Ignored, want)
	}
}

func TestChoicesN(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	one := chatOK(t, s, chatBody("sim-chat", 1, ipipPrompt, map[string]any{"logprobs": true, "top_logprobs": 2}))
	many := chatOK(t, s, chatBody("sim-chat", 1, ipipPrompt, map[string]any{"logprobs": true, "top_logprobs": 2, "n": 8}))
	if len(many.Choices) != 8 {
		t.Fatalf("%d choices, want 8", len(many.Choices))
	}
	answers := map[string]bool{}
	sum := 0
	for i, c := range many.Choices {
		if c.Index != i {
			t.Errorf("choice %d has index %d", i, c.Index)
		}
		answers[*c.Message.Content] = true
		sum += len(c.Logprobs.Content)
	}
	if a, b := mustJSON(t, many.Choices[0]), mustJSON(t, one.Choices[0]); !bytes.Equal(a, b) {
		t.Errorf("choice 0 of n 8 %+v, the answer of n 1 %+v", many.Choices[0], one.Choices[0])
	}
	if len(answers) < 2 || many.Usage.CompletionTokens != sum {
		t.Errorf("%d distinct answers in 8 choices, completion_tokens %d for %d tokens; want several, and the sum",
			len(answers), many.Usage.CompletionTokens, sum)
	}
}

// TestStreamWithLogprobsAndSchema: a stream asked for logprobs and a schema sends the same content as the plain
// reply (without logprobs), and a content_filter stream ends with that finish reason and no content.
func TestStreamWithLogprobsAndSchema(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	extra := map[string]any{"logprobs": true, "top_logprobs": 5, "response_format": schemaFormat([]string{"1", "2", "3", "4", "5"}, false)}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := *chatOK(t, s, chatBody("sim-chat", 2, ipipPrompt, extra)).Choices[0].Message.Content
	extra["stream"] = true
	content, finish := readStream(t, ts, chatBody("sim-chat", 2, ipipPrompt, extra))
	if content != want || finish != "stop" {
		t.Errorf("stream %q, %q; want %q, stop", content, finish, want)
	}

	_, tsf := newTestServer(t, Config{Faults: Faults{ContentFilter: 1}})
	content, finish = readStream(t, tsf, chatBody("sim-chat", 2, ipipPrompt, extra))
	if content != "" || finish != "content_filter" {
		t.Errorf("content_filter stream %q, %q; want no content, content_filter", content, finish)
	}
}

func readStream(t *testing.T, ts *httptest.Server, body any) (content, finish string) {
	t.Helper()
	resp, raw := post(t, ts, "/v1/chat/completions", body, nil)
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(string(raw), "data: [DONE]\n\n") {
		t.Fatalf("stream: %d %s", resp.StatusCode, raw)
	}
	var sb strings.Builder
	for _, ev := range strings.Split(string(raw), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c chatChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				sb.WriteString(*ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	return sb.String(), finish
}

// TestBatchLinesAnswerAsSync: batch lines with logprobs, a schema and max_tokens get the choices, and the served
// model and fingerprint (two snapshots, changed from seed 3 on), that the synchronous endpoint gives the same bodies.
func TestBatchLinesAnswerAsSync(t *testing.T) {
	clk := newFakeClock()
	change := &SnapshotChange{FromSeed: 3}
	_, ts := newTestServer(t, Config{Now: clk.Now, SnapshotChange: change})
	c := newClient(ts)
	var bodies [][]byte
	for i := range 6 {
		extra := map[string]any{"logprobs": true, "top_logprobs": 4}
		switch i % 3 {
		case 1:
			extra["response_format"] = schemaFormat([]string{"1", "2", "3", "4", "5"}, true)
		case 2:
			extra["max_completion_tokens"] = 2
		}
		bodies = append(bodies, mustJSON(t, chatBody("sim-chat", i, ipipPrompt, extra)))
	}
	ids := cellIDs(len(bodies))
	b := submit(t, c, "/v1/chat/completions", inputFile(ids, "/v1/chat/completions", bodies), nil)
	got, err := c.RetrieveBatch(t.Context(), b.ID)
	if err != nil || got.Status != "completed" {
		t.Fatalf("batch %+v, %v; want completed", got, err)
	}
	sync, err := New(Config{Now: clk.Now, SnapshotChange: change})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	served := map[string]bool{}
	for _, l := range fileLines(t, c, got.OutputFileID) {
		i := slices.Index(ids, l.CustomID)
		var batch, want struct {
			Choices           json.RawMessage `json:"choices"`
			Usage             usage           `json:"usage"`
			Model             string          `json:"model"`
			SystemFingerprint string          `json:"system_fingerprint"`
		}
		code, raw := chat(t, sync, json.RawMessage(bodies[i]))
		if l.Response == nil || json.Unmarshal(l.Response.Body, &batch) != nil || code != http.StatusOK ||
			json.Unmarshal(raw, &want) != nil {
			t.Fatalf("line %s: %+v; sync %d %s", l.CustomID, l, code, raw)
		}
		if !bytes.Equal(batch.Choices, want.Choices) || batch.Usage != want.Usage {
			t.Errorf("line %s: batch %s %+v, sync %s %+v", l.CustomID, batch.Choices, batch.Usage, want.Choices, want.Usage)
		}
		if batch.Model != want.Model || batch.SystemFingerprint != want.SystemFingerprint || batch.Model == "" {
			t.Errorf("line %s: batch served by %q %q, sync by %q %q", l.CustomID, batch.Model, batch.SystemFingerprint,
				want.Model, want.SystemFingerprint)
		}
		served[batch.Model] = true
		seen++
	}
	if seen != len(bodies) || len(served) != 2 {
		t.Errorf("%d output lines served by %v, want %d by two snapshots", seen, served, len(bodies))
	}
}

func TestAnthropicContentFilter(t *testing.T) {
	_, ts := newTestServer(t, Config{Faults: Faults{ContentFilter: 1}})
	code, raw := anthropic(t, ts, http.MethodPost, "/v1/messages", messagesParams(0), true)
	var m struct {
		Content    []any  `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	if code != http.StatusOK || json.Unmarshal(raw, &m) != nil || len(m.Content) != 0 || m.StopReason != "refusal" {
		t.Errorf("messages under content_filter: %d %s; want no content, stop_reason refusal", code, raw)
	}
}

// TestRequestLogKeepsTheLabelDistribution: a request with logprobs logs the labels its answer chose among (the
// prompt's, or the json_schema enum's) and the server's own distribution over them. It sums to 1, puts the most
// mass on a label the reply lists first or second, and agrees with what the 20 listed alternatives give per
// label within the spellings the list leaves out; under a position bias the biased label gets at least the
// bias's share. A request without logprobs logs neither.
func TestRequestLogKeepsTheLabelDistribution(t *testing.T) {
	bias := PositionBias{Position: BiasFirst, Strength: 0.4}
	for _, cfg := range []Config{{}, {PositionBias: bias}, {Sampling: SamplingSeeded}} {
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range labelCases {
			for seed := range 10 {
				for _, format := range []any{nil, schemaFormat(tc.labels, false)} {
					extra := map[string]any{"logprobs": true, "top_logprobs": 20}
					if format != nil {
						extra["response_format"] = format
					}
					resp := chatOK(t, s, chatBody("sim-chat", seed, tc.prompt, extra))
					log := s.Requests()
					q := log[len(log)-1]
					if !slices.Equal(q.Labels, tc.labels) || len(q.LabelProbs) != len(tc.labels) {
						t.Fatalf("%+v %s: logged labels %q probs %v, want a distribution over %q", cfg, tc.name, q.Labels, q.LabelProbs, tc.labels)
					}
					at := checkLogprobs(t, resp.Choices[0], resp.Usage.CompletionTokens, 20)
					listed := make([]float64, len(tc.labels))
					var sum, total float64
					for _, a := range resp.Choices[0].Logprobs.Content[at].TopLogprobs {
						if l := optionOf(a.Token, tc.labels); l != "" {
							listed[slices.Index(tc.labels, l)] += math.Exp(a.Logprob)
							sum += math.Exp(a.Logprob)
						}
					}
					for j, p := range q.LabelProbs {
						total += p
						if d := math.Abs(listed[j]/sum - p); d > 0.02 {
							t.Errorf("%+v %s seed %d: label %s logged %.4f, listed %.4f", cfg, tc.name, seed, tc.labels[j], p, listed[j]/sum)
						}
					}
					if math.Abs(total-1) > 1e-12 {
						t.Errorf("%+v %s: logged probabilities sum to %v", cfg, tc.name, total)
					}
					if cfg.PositionBias.Strength > 0 && q.LabelProbs[0] < bias.Strength {
						t.Errorf("%s seed %d: the first label, biased by %.1f, has %.3f", tc.name, seed, bias.Strength, q.LabelProbs[0])
					}
				}
			}
		}
		chatOK(t, s, chatBody("sim-chat", 1, ipipPrompt, nil))
		if q := s.Requests()[len(s.Requests())-1]; q.Labels != nil || q.LabelProbs != nil {
			t.Errorf("a request without logprobs logged %q %v", q.Labels, q.LabelProbs)
		}
	}
}
