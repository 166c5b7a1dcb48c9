// Package estimate sizes an experiment before it runs: how many calls, how many prompt tokens (exact tiktoken
// counts of the rendered prompts), at most how many completion tokens, what it may cost, and how long the
// models' rpm/tpm limits force it to take at the least. It never calls a model.
//
// # Wall-time lower bound
//
// The bound of a model is what its account limits imply, whatever the concurrency and latency:
//
//	rpm bound = max(0, cells − burst_rpm) / rpm minutes,           burst_rpm = rpm
//	tpm bound = max(0, reserved − burst_tpm) / tpm minutes,        burst_tpm = tpm
//	reserved  = prompt tokens + cells × max_tokens
//
// The provider's bucket starts full and holds one minute of the limit, so the first minute can go about twice
// as fast as the rest: the first burst is free, every later call waits for refill. silico's own gates never
// admit more than that (their buckets hold at most a minute, and may start empty, which makes a run up to a
// minute longer than the bound), so the bound holds whatever they do. A call's reservation is its prompt plus max_tokens, as activities.reserveTokens reserves it and as
// OpenAI counts a request against TPM on arrival. The model's bound is the larger of the two, and LimitedBy
// names it; a model with neither limit set, or whose cells fit in the first burst, is bounded by concurrency
// and latency only: its bound is unknown (0, and LimitedBy is "concurrency") unless WithLatency is given the
// model's latency, from the simulator's settings or from the calls of earlier runs; then it is
//
//	latency bound = ⌈calls ÷ in flight⌉ × latency,    in flight = max_concurrency × passes at once (InFlight)
//
// and the model's bound is the largest of the three.
//
// Models run one after another in submission order, at most run.max_parallel_passes passes at once. With one
// pass at a time the models never overlap and the run's bound is the sum of theirs. With more, passes of
// neighbouring models can overlap, so the only bound that always holds is the largest model's: the run's bound
// is the maximum then. Both are lower bounds: a real run also pays for latency, retries and pauses.
package estimate

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
)

// Limits named in ModelEstimate.LimitedBy.
const (
	LimitRPM         = "rpm"
	LimitTPM         = "tpm"
	LimitConcurrency = "concurrency"
	// LimitBatch: the model runs in batch mode, whose calls wait for the provider (within 24 h), not for rpm or
	// tpm; MinWall is 0.
	LimitBatch = "batch"
)

// ModelEstimate sizes the calls of one model.
type ModelEstimate struct {
	// Model is the model's id in the spec; Name the model name sent to the provider (it picks the tokenizer).
	Model string `json:"model"`
	Name  string `json:"name"`
	// Cells is the number of the model's cells: Estimate.Grid's calls over its models.
	Cells int `json:"cells"`
	// Cached is how many of them the response cache already answers (see WithCache); Calls the others, the calls
	// the run will make. Tokens, cost and wall time are those of the calls.
	Cached int `json:"cached"`
	Calls  int `json:"calls"`
	// SavedMinUSD and SavedMaxUSD are the cost range of the cached cells: money the cache saves.
	SavedMinUSD float64 `json:"saved_min_usd,omitempty"`
	SavedMaxUSD float64 `json:"saved_max_usd,omitempty"`
	// PromptTokens are exact tiktoken counts of every rendered prompt, as the provider reports them in
	// usage.prompt_tokens. In cumulative mode they are an upper bound: earlier answers count as max_tokens each.
	PromptTokens int `json:"prompt_tokens"`
	// ImageTokens is the part of PromptTokens that pictures cost, at OpenAI's vision rates (llm.ImageTokens).
	// Pictures given by URL are not counted (their size is unknown without downloading them; a note says so).
	ImageTokens int `json:"image_tokens,omitempty"`
	// MaxCompletionTokens is cells × max_tokens (experiment.DefaultMaxTokens when the model sets none).
	MaxCompletionTokens int `json:"max_completion_tokens"`
	// MinCostUSD assumes one completion token per call (and, in cumulative mode, one-token earlier answers);
	// MaxCostUSD assumes every completion uses max_tokens. Both are 0 when the model is not Priced.
	MinCostUSD float64 `json:"min_cost_usd"`
	MaxCostUSD float64 `json:"max_cost_usd"`
	// Priced is false when no price is known (no price: in the spec, not in llm's table).
	Priced bool `json:"priced"`
	// MinWall is the wall-time lower bound implied by the model's rpm and tpm (see the package doc).
	MinWall time.Duration `json:"min_wall_ns"`
	// LimitedBy names the limit behind MinWall: "rpm", "tpm", "latency" (calls ÷ calls in flight × Latency,
	// see WithLatency), "concurrency" (no rate limit binds and no latency is known: MinWall is unknown, 0), or ""
	// for a model without cells.
	LimitedBy string `json:"limited_by"`
	// Latency is the time a call of the model takes as known before the run, and LatencySource where it is known
	// from; zero when nothing is known (see WithLatency).
	Latency       time.Duration `json:"latency_ns,omitempty"`
	LatencySource string        `json:"latency_source,omitempty"`
	// Batch is set for a model in batch mode: its batches, and what its calls would cost sent synchronously.
	// Its cost range is then at the batch price, and MinWall means nothing (the provider answers within 24 h).
	Batch *BatchEstimate `json:"batch,omitempty"`
}

// Estimate sizes a whole experiment: the totals of its models.
type Estimate struct {
	Cells               int     `json:"cells"`
	Cached              int     `json:"cached"`
	Calls               int     `json:"calls"`
	SavedMinUSD         float64 `json:"saved_min_usd,omitempty"`
	SavedMaxUSD         float64 `json:"saved_max_usd,omitempty"`
	PromptTokens        int     `json:"prompt_tokens"`
	ImageTokens         int     `json:"image_tokens,omitempty"`
	MaxCompletionTokens int     `json:"max_completion_tokens"`
	MinCostUSD          float64 `json:"min_cost_usd"`
	MaxCostUSD          float64 `json:"max_cost_usd"`
	// MinWall is the run's wall-time lower bound: the sum of the models' when passes run one at a time, else the
	// largest (see the package doc).
	MinWall time.Duration   `json:"min_wall_ns"`
	Models  []ModelEstimate `json:"models"`
	// Notes qualify the figures: upper bounds, unpriced models, how MinWall was combined.
	Notes []string `json:"notes,omitempty"`
	// Grid is Cells as the product of the factors the grid multiplies (experiment.Spec.Grid): the formula
	// validate, the dry run and the run's summary print.
	Grid experiment.Grid `json:"grid"`
}

// Compute estimates spec, which must be valid (as specfile.Load returns it), counting tokens with tok.
//
// Prompts depend on the item and the persona only, and their token counts on the model's encoding only, so each
// distinct message is counted once per encoding and the counts are multiplied by the seeds: a 200,000-cell grid
// costs one render per (item, persona) and one tokenizer pass per distinct message text.
func Compute(spec *experiment.Spec, tok *llm.Tokenizer) (Estimate, error) {
	if spec == nil || tok == nil {
		return Estimate{}, errors.New("estimate: nil spec or tokenizer")
	}
	if spec.IsEmbed() {
		return computeEmbed(spec, tok)
	}
	items, personas, seeds := len(spec.Questionnaire.Items), len(spec.Personas), len(spec.Seeds)
	if spec.Run.Cumulative && items > 0 && personas > 0 {
		// The runner renders with a history; fail here, as it would, when the prompt cannot carry one.
		if _, err := spec.Render(experiment.Cell{}, []experiment.Turn{{}}); err != nil {
			return Estimate{}, fmt.Errorf("estimate: cumulative mode: %w", err)
		}
	}
	c := counter{spec: spec, tok: tok, grids: map[string]*grid{}}
	pics := countImages(spec)
	est := Estimate{Grid: spec.Grid()}
	for mi, m := range spec.Models {
		g, err := c.grid(mi)
		if err != nil {
			return Estimate{}, err
		}
		me := ModelEstimate{Model: m.ID, Name: m.Name, Cells: seeds * spec.SeedCells()}
		me.Calls = me.Cells
		maxTok := m.Params.CompletionCap()
		me.MaxCompletionTokens = me.Cells * maxTok
		perSeed, perSeedMin := g.plain+pics.tokens, g.plain+pics.tokens
		me.ImageTokens = seeds * pics.tokens
		if spec.Run.Cumulative {
			// Item k of a persona carries k earlier turns: their user messages (counted exactly) and answers of
			// at most max_tokens tokens, at least one.
			turns := personas * items * (items - 1) / 2 * spec.Probes()
			perSeed += g.history + turns*(g.answerOverhead+maxTok)
			perSeedMin += g.history + turns*(g.answerOverhead+1)
		}
		me.PromptTokens = seeds * perSeed
		if price, ok := llm.PriceFor(m); ok {
			me.Priced = true
			me.MinCostUSD = llm.Cost(price, seeds*perSeedMin, me.Cells).Float()
			me.MaxCostUSD = llm.Cost(price, me.PromptTokens, me.MaxCompletionTokens).Float()
		}
		if spec.Batched(m) {
			be, err := batchEstimate(spec, mi)
			if err != nil {
				return Estimate{}, err
			}
			be.SyncMinCostUSD, be.SyncMaxCostUSD = me.MinCostUSD, me.MaxCostUSD
			price, ok := llm.BatchPriceFor(m)
			me.Priced = ok
			me.MinCostUSD = llm.Cost(price, seeds*perSeedMin, me.Cells).Float()
			me.MaxCostUSD = llm.Cost(price, me.PromptTokens, me.MaxCompletionTokens).Float()
			me.Batch = be
		}
		me.MinWall, me.LimitedBy = wallBound(m, me.Cells, me.PromptTokens+me.MaxCompletionTokens)
		if me.Batch != nil && me.Cells > 0 {
			me.MinWall, me.LimitedBy = 0, LimitBatch
		}

		est.Models = append(est.Models, me)
	}
	est.total(spec)
	if pics.byURL > 0 {
		est.Notes = append(est.Notes, fmt.Sprintf("%d pictures given by URL are not counted in the prompt tokens "+
			"(their sizes are known only once downloaded); files named in the spec are", pics.byURL*len(spec.Seeds)*len(spec.Models)))
	}
	return est, nil
}

// total sums the models' figures into the estimate's and combines their wall times.
func (e *Estimate) total(spec *experiment.Spec) {
	e.Cells, e.Cached, e.Calls, e.PromptTokens, e.MaxCompletionTokens, e.ImageTokens = 0, 0, 0, 0, 0, 0
	e.MinCostUSD, e.MaxCostUSD, e.SavedMinUSD, e.SavedMaxUSD = 0, 0, 0, 0
	for _, me := range e.Models {
		e.Cells += me.Cells
		e.Cached += me.Cached
		e.Calls += me.Calls
		e.PromptTokens += me.PromptTokens
		e.ImageTokens += me.ImageTokens
		e.MaxCompletionTokens += me.MaxCompletionTokens
		e.MinCostUSD += me.MinCostUSD
		e.MaxCostUSD += me.MaxCostUSD
		e.SavedMinUSD += me.SavedMinUSD
		e.SavedMaxUSD += me.SavedMaxUSD
	}
	e.MinWall, e.Notes = combine(spec, e.Models)
}

// WithCache returns e for a run in which held[model id] cells of each model are answered by the response cache
// (respcache.Held counts them): those cells make no call, so the calls, tokens, cost and wall time are the remaining
// cells' share, and the cached cells' share of the cost is saved. The shares are proportional to the cells: the
// estimate does not keep each cell's own token count.
func (e Estimate) WithCache(spec *experiment.Spec, held map[string]int) Estimate {
	models := make([]ModelEstimate, len(e.Models))
	for i, me := range e.Models {
		cached := min(held[me.Model], me.Cells)
		if cached > 0 {
			left := float64(me.Cells-cached) / float64(me.Cells)
			me.Cached, me.Calls = cached, me.Cells-cached
			me.SavedMinUSD, me.SavedMaxUSD = me.MinCostUSD*(1-left), me.MaxCostUSD*(1-left)
			me.MinCostUSD, me.MaxCostUSD = me.MinCostUSD*left, me.MaxCostUSD*left
			me.PromptTokens = int(float64(me.PromptTokens) * left)
			me.ImageTokens = int(float64(me.ImageTokens) * left)
			me.MaxCompletionTokens = int(float64(me.MaxCompletionTokens) * left)
			me.MinWall, me.LimitedBy = wallBound(spec.Models[i], me.Calls, me.PromptTokens+me.MaxCompletionTokens)
			if d := latencyBound(me.Calls, InFlight(spec, i), me.Latency); d > me.MinWall {
				me.MinWall, me.LimitedBy = d, LimitLatency
			}
			if me.Batch != nil {
				// The batches are those of every cell: at most what the run submits.
				be := *me.Batch
				be.SyncMinCostUSD, be.SyncMaxCostUSD = be.SyncMinCostUSD*left, be.SyncMaxCostUSD*left
				me.Batch = &be
				me.MinWall, me.LimitedBy = 0, LimitBatch
			}
		}
		models[i] = me
	}
	e.Models = models
	e.total(spec)
	return e
}

// wallBound is a model's wall-time lower bound from its rpm and tpm, and the limit behind it.
func wallBound(m experiment.Model, cells, reserved int) (time.Duration, string) {
	if cells == 0 {
		return 0, ""
	}
	var best time.Duration
	by := LimitConcurrency
	if d := bucketBound(cells, m.RPM); d > best {
		best, by = d, LimitRPM
	}
	if d := bucketBound(reserved, m.TPM); d > best {
		best, by = d, LimitTPM
	}
	return best, by
}

// bucketBound is the least time a bucket refilling perMinute a minute, full (one minute's worth) at the start,
// takes to admit n units: max(0, n − perMinute) / perMinute minutes. Zero when there is no limit.
func bucketBound(n, perMinute int) time.Duration {
	if perMinute <= 0 || n <= perMinute {
		return 0
	}
	return time.Duration(float64(n-perMinute) / float64(perMinute) * float64(time.Minute))
}

// combine is the run's wall-time bound and the notes on the estimate.
func combine(spec *experiment.Spec, models []ModelEstimate) (time.Duration, []string) {
	var notes []string
	if spec.Run.Cumulative {
		notes = append(notes, "cumulative mode: prompt tokens are an upper bound (each earlier answer counted as max_tokens tokens)")
	}
	for _, m := range models {
		if !m.Priced && m.Cells > 0 {
			notes = append(notes, fmt.Sprintf("model %s: no price known; set price: in the spec", m.Model))
		}
		if m.Latency > 0 {
			notes = append(notes, latencyNote(m))
		}
	}
	var sum, largest time.Duration
	for _, m := range models {
		sum += m.MinWall
		largest = max(largest, m.MinWall)
	}
	if len(models) > 1 && max(1, spec.Run.MaxParallelPasses) == 1 {
		notes = append(notes, "wall-time bound: models run one pass at a time, so their bounds add up")
		return sum, notes
	}
	if len(models) > 1 {
		notes = append(notes, "wall-time bound: passes of different models may overlap, so the run's bound is the largest model's")
	}
	return largest, notes
}

// counter counts the prompts of a spec once per encoding.
type counter struct {
	spec  *experiment.Spec
	tok   *llm.Tokenizer
	grids map[string]*grid // by encoding, and whether the prompt carries the verbalized instruction
}

// grid holds the token counts of a spec's prompts under one encoding, summed over one seed.
type grid struct {
	// plain is the sum over the cells of one (model, seed) of the prompt without history.
	plain int
	// history is, in cumulative mode, the sum over (item k, persona) of the user messages of items 0..k-1.
	history int
	// answerOverhead is the tokens an assistant message costs besides its content.
	answerOverhead int
}

// grid counts the prompts of model mi's cells for every (item, persona), under its encoding. Models whose
// encodings are the same share the counts, unless one answer mode appends an instruction to the prompt
// (experiment.VerbalizedInstruction) and the other does not.
func (c *counter) grid(mi int) (*grid, error) {
	name := c.spec.Models[mi].Name
	enc := llm.EncodingFor(name)
	if c.spec.AnswerFor(c.spec.Models[mi]).Mode == experiment.AnswerVerbalized {
		enc += "\x00verbalized"
	}
	if g, ok := c.grids[enc]; ok {
		return g, nil
	}
	tc := textCounter{tok: c.tok, model: name, lines: map[string]int{}}
	base := c.tok.CountMessages(name, nil)
	// roleCost is what a message costs besides its content's tokens.
	roleCost := map[string]int{}
	cost := func(role, content string) int {
		rc, ok := roleCost[role]
		if !ok {
			rc = c.tok.CountMessages(name, []experiment.Message{{Role: role}}) - base
			roleCost[role] = rc
		}
		return rc + tc.count(content)
	}
	g := &grid{answerOverhead: cost(experiment.RoleAssistant, "")}
	items, personas := len(c.spec.Questionnaire.Items), len(c.spec.Personas)
	// userSoFar[p] is the cost of persona p's user messages of the items before the current one.
	userSoFar := make([]int, personas)
	// Every wording and prompt variant is a cell of its own text (Validate refuses them under run.cumulative,
	// so the history below only ever sees the original). A verbalized probe (answer.modes with verbalized and another mode) is a call of its own, with the
	// instruction appended: its prompt is rendered and counted as the main call's is.
	for pv := range c.spec.NumPromptVariants() {
		for it := range items {
			for v := range c.spec.Variants(it) {
				for p := range personas {
					for probe := range c.spec.Probes() {
						cell := experiment.Cell{Model: mi, PromptVariant: pv, Item: it, Variant: v, Persona: p, Probe: probe}
						msgs, err := c.spec.Render(cell, nil)
						if err != nil {
							return nil, fmt.Errorf("estimate: render item %d persona %d: %w", it, p, err)
						}
						n := base
						for _, m := range msgs {
							n += cost(m.Role, m.Content)
						}
						// A balanced item's reversed cell shows the same texts in another order: as many tokens,
						// give or take a relabelled enumeration.
						g.plain += n * c.spec.Orders(it)
						if !c.spec.Run.Cumulative || len(msgs) == 0 {
							continue
						}
						// Every call of the persona, a probe's too, carries its earlier turns.
						g.history += userSoFar[p]
						if probe == c.spec.Probes()-1 {
							// The runner replays the last message of the plain prompt as the turn's user message.
							userSoFar[p] += cost(experiment.RoleUser, msgs[len(msgs)-1].Content)
						}
					}
				}
			}
		}
	}
	c.grids[enc] = g
	return g, nil
}

// textCounter counts the tokens of texts line by line, each distinct line once.
//
// Tiktoken first splits a text into pieces with its encoding's regular expression, then encodes each piece on
// its own, so a text's count is the sum of its pieces'. Under cl100k_base and o200k_base a run of newlines
// followed by a printable ASCII character other than '/' always ends a piece: every alternative of their
// patterns that matches a newline ends with the newline run (o200k's punctuation alternative, ` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
// may swallow a '/' after it, hence the exception), and none starts with one. Cutting there and counting the
// parts gives the text's count exactly (TestLineSplitExact checks it). Prompts are mostly lines that depend on the
// item or the persona alone, so a 100,000-cell grid tokenizes a few thousand lines instead of 100,000 prompts.
type textCounter struct {
	tok   *llm.Tokenizer
	model string
	lines map[string]int
}

func (t *textCounter) count(text string) int {
	n := 0
	for text != "" {
		line := text[:cut(text)]
		text = text[len(line):]
		k, ok := t.lines[line]
		if !ok {
			k = t.tok.Count(t.model, line)
			t.lines[strings.Clone(line)] = k
		}
		n += k
	}
	return n
}

// cut is the length of the first part of text: up to and including the first newline run that is followed by a
// printable ASCII character other than '/', or all of text.
func cut(text string) int {
	for i := 0; i+1 < len(text); i++ {
		if text[i] == '\n' {
			if next := text[i+1]; next > ' ' && next < 0x7f && next != '/' {
				return i + 1
			}
		}
	}
	return len(text)
}

// imageCount is what the pictures of one seed's cells cost: tokens of those whose size is known (data URLs: the
// files the starter inlined), and how many cell pictures are given by URL.
type imageCount struct{ tokens, byURL int }

// countImages sizes the pictures of every (item, persona) cell once per distinct picture. A persona's pictures
// are sent with each of its items, an item's with each persona.
func countImages(spec *experiment.Spec) imageCount {
	if !spec.HasImages() {
		return imageCount{}
	}
	sized := map[string]int{}
	cost := func(refs []string) imageCount {
		var c imageCount
		for _, ref := range refs {
			if !strings.HasPrefix(ref, "data:") {
				c.byURL++
				continue
			}
			n, ok := sized[ref]
			if !ok {
				if _, payload, found := strings.Cut(ref, ";base64,"); found {
					if data, err := base64.StdEncoding.DecodeString(payload); err == nil {
						if w, h, err := llm.ImageSize(data); err == nil {
							n = llm.ImageTokens(w, h, spec.Image.Detail)
						}
					}
				}
				sized[ref] = n
			}
			c.tokens += n
		}
		return c
	}
	// calls[it] is how many calls of one (model, seed, persona) show item it: one per prompt variant, wording
	// variant, order and probe, each sending the pictures again.
	calls := make([]int, len(spec.Questionnaire.Items))
	perPersona := 0
	for it := range calls {
		calls[it] = spec.NumPromptVariants() * spec.Variants(it) * spec.Orders(it) * spec.Probes()
		perPersona += calls[it]
	}
	var total imageCount
	personas := len(spec.Personas)
	for i, it := range spec.Questionnaire.Items {
		c := cost(it.Images)
		total.tokens += personas * calls[i] * c.tokens
		total.byURL += personas * calls[i] * c.byURL
	}
	for _, p := range spec.Personas {
		c := cost(p.Images)
		total.tokens += perPersona * c.tokens
		total.byURL += perPersona * c.byURL
	}
	return total
}
