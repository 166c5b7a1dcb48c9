// Package experiment holds the experiment spec (the grid a researcher describes), its defaults and validation,
// the planning of cells and passes, prompt rendering and answer matching. Package specfile reads specs from
// files and workflow inputs into these types.
//
// A Spec in memory is always resolved: personas and items read from CSV files are inlined, option sets are
// lists, defaults are filled in. Its JSON form (the struct tags below) is itself a valid spec file, and it is the
// input of the ExperimentWorkflow, so it must never hold a secret: models name the environment variable that
// holds their key (APIKeyEnv), never the key.
package experiment

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/silicolab/silico/usage"
)

// Spec is one experiment: models × seeds × items × personas, and how to run it.
type Spec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Kind is chat (default: models answer the questionnaire) or embed (models embed texts; see Embed).
	Kind   string  `json:"kind,omitempty"`
	Seeds  []int64 `json:"seeds"`
	Models []Model `json:"models"`
	Prompt Prompt  `json:"prompt"`
	// PromptVariants are other prompts every cell is also asked in (see PromptVariant); Prompt is variant
	// "original".
	PromptVariants []PromptVariant `json:"prompt_variants,omitempty"`
	Personas       []Persona       `json:"personas"`
	Questionnaire  Questionnaire   `json:"questionnaire"`
	Run            RunSettings     `json:"run"`
	// BudgetUSD stops the run when the next call could exceed it. Zero means no budget.
	BudgetUSD usage.USD `json:"budget_usd,omitempty"`
	// Simulator configures the built-in simulator for models with provider "sim" (in-process runs only).
	Simulator *SimulatorSettings `json:"simulator,omitempty"`
	// Image says how the pictures of items and personas are fetched (see images.go).
	Image ImageSettings `json:"image,omitzero"`
	// Embed says which texts a kind: embed spec embeds and how requests are packed.
	Embed *EmbedSettings `json:"embed,omitempty"`
	// Reference is a human reference sample the answers are compared with (see reference.go); nil: none.
	Reference *Reference `json:"reference,omitempty"`
	// Analysis says how the outputs' statistics are computed (see analysis.go); zero: the defaults.
	Analysis AnalysisSettings `json:"analysis,omitzero"`
	// Notes are remarks of specfile.Parse that are not errors ("file:line:col: field: text"), such as a key of the
	// seed-000 framework's files that is accepted but has no effect here. Commands print them; they are never
	// serialised, so they do not change the spec's hash or its run.
	Notes []string `json:"-"`
	// Defaulted are the keys the spec file left out that specfile.Parse gave a spec file's default which a spec
	// resolved by an earlier release lacks (run.seed_per_cell), newest last: leaving them out again gives the
	// spec an earlier release resolved from the same file (specfile.Earlier). Never serialised.
	Defaulted []string `json:"-"`

	// rt caches the templates compiled by Validate, so Render does no parsing per call. Never serialised.
	rt *compiled
}

// Model is one model endpoint of the grid.
type Model struct {
	// ID names the model in cell ids and outputs; unique within the spec.
	ID string `json:"id"`
	// Name is the model name sent to the provider ("gpt-4o-mini", "qwen2.5").
	Name string `json:"name"`
	// Provider is "openai" (any OpenAI-compatible server), "anthropic" (Anthropic's Messages API; see
	// anthropic.go for what it cannot do), "gemini" (Google's Gemini API: its OpenAI-compatible endpoint, and its
	// Batch API in batch mode) or "sim" (the built-in simulator). Default "openai".
	Provider string `json:"provider,omitempty"`
	// BaseURL of the provider's API, e.g. "http://localhost:11434/v1". Empty: the provider's default
	// (https://api.openai.com/v1, https://api.anthropic.com/v1, https://generativelanguage.googleapis.com/v1beta,
	// or the worker's simulator).
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable of the worker that holds the API key. Never the key itself.
	// Empty: no key is sent, except for providers anthropic and gemini, whose defaults are ANTHROPIC_API_KEY and
	// GEMINI_API_KEY.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	Params    Params `json:"params,omitempty"`
	// MaxConcurrency caps this model's calls in flight across the whole run (0: only run.max_concurrency).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// RPM and TPM are the account's requests and tokens per minute for this model (0: unlimited).
	RPM int `json:"rpm,omitempty"`
	TPM int `json:"tpm,omitempty"`
	// Burst is how much of one minute's rpm/tpm silico's buckets may hold for a burst after an idle spell (0:
	// 1.0, a minute's worth, as providers' buckets). Passes start with empty buckets either way (see ratelimit).
	Burst float64 `json:"burst,omitempty"`
	// Price overrides the built-in price table. Nil: the table's price, or unknown (cost 0).
	Price *Price `json:"price,omitempty"`
	// Cache is this model's response cache policy; empty: run.cache.
	Cache CachePolicy `json:"cache,omitempty"`
	// ImageTransport is how this model receives pictures; empty: run.image_transport.
	ImageTransport ImageTransport `json:"image_transport,omitempty"`
	// Batch says whether this model's cells go through the provider's batch API; nil: run.batch.
	Batch *BatchSettings `json:"batch,omitempty"`
	// Answer says what this model's cells record besides the written option; nil: run.answer.
	Answer *AnswerSettings `json:"answer,omitempty"`
}

// Params are the sampling parameters sent with every call of a model, each by its OpenAI Chat Completions name
// and exactly as written (see params.go for what each accepts). Unset fields are not sent.
type Params struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	// MaxTokens caps the completion. Zero: the provider's default (budgets then assume DefaultMaxTokens).
	MaxTokens int      `json:"max_tokens,omitempty"`
	Stop      []string `json:"stop,omitempty"`
	// PresencePenalty and FrequencyPenalty are in [-2, 2].
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	// LogitBias maps token ids (decimal strings of the model's tokenizer) to a bias in [-100, 100].
	LogitBias map[string]int `json:"logit_bias,omitempty"`
	// ReasoningEffort is a reasoning model's effort (ReasoningEfforts).
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// MaxCompletionTokens caps the completion including reasoning tokens; it replaces max_tokens (set one).
	MaxCompletionTokens int `json:"max_completion_tokens,omitempty"`
	// Logprobs asks for the log probability of every generated token; TopLogprobs (0–20) for that many
	// alternatives at each position. An answer mode of logprobs sets both.
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs *int `json:"top_logprobs,omitempty"`
	// ResponseFormat is sent as response_format: {"type": "text"}, {"type": "json_object"} or {"type":
	// "json_schema", "json_schema": {...}}, as JSON. The answer mode json_schema builds it per item.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// N is the number of choices; only 1 is accepted (silico records one answer per cell; more samples are more
	// seeds).
	N int `json:"n,omitempty"`
	// Extra are keys a server adds to the OpenAI format (top_k, min_p, repeat_penalty), each value the JSON the
	// spec wrote, sent verbatim at the top level of the request body.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// DefaultMaxTokens is the completion size assumed for estimates and budgets when a model sets no max_tokens.
const DefaultMaxTokens = 256

// Price is a model's price in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
	// BatchDiscount is the share of the price a batch call costs (nil: DefaultBatchDiscount).
	BatchDiscount *float64 `json:"batch_discount,omitempty"`
	// BatchInputPerMTok and BatchOutputPerMTok are the batch prices, where the provider's are not the discount's.
	BatchInputPerMTok  *float64 `json:"batch_input_per_mtok,omitempty"`
	BatchOutputPerMTok *float64 `json:"batch_output_per_mtok,omitempty"`
}

// Prompt is how a cell's messages are built. Type "chat" uses Messages; type "normal" sends Template as a single
// user message. Placeholders: {general_instruction}, {persona_description}, {question}, {answer_options};
// "{{" and "}}" are literal braces.
type Prompt struct {
	Type     string    `json:"type"`
	Template string    `json:"template,omitempty"`
	Messages []Message `json:"messages,omitempty"`
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Images are the pictures Render attaches to a user message (references as the resolved spec has them:
	// https or loopback http URLs, or data URLs). Never part of a spec's prompt, so never serialised: the
	// response cache keys pictures by the digests of their bytes (see respcache.Key).
	Images []string `json:"-"`
}

// Persona is one simulated respondent.
type Persona struct {
	ID string `json:"id"`
	// Attributes fill the persona's template; title, name and age always exist (empty when not given).
	Attributes map[string]string `json:"attributes,omitempty"`
	// Template renders the persona description, default DefaultPersonaTemplate.
	Template string `json:"template,omitempty"`
	// Images are pictures of the persona (https URLs, loopback http URLs or data URLs once resolved; a spec
	// file may name files, which the starter inlines).
	Images []string `json:"images,omitempty"`
}

// DefaultPersonaTemplate is the persona template of the seed-000 framework.
const DefaultPersonaTemplate = "{title} {name} is {age} years old."

// Questionnaire is the instrument every persona answers.
type Questionnaire struct {
	Name string `json:"name"`
	// Instruction fills {general_instruction}.
	Instruction string `json:"instruction"`
	// Options are the default answer options of every item.
	Options OptionSet `json:"options"`
	Scales  []Scale   `json:"scales,omitempty"`
	Items   []Item    `json:"items"`
	// Order is how every item's options are ordered when shown (see OrderSettings); nil: as written.
	Order *OrderSettings `json:"order,omitempty"`
}

// OptionSet is an ordered list of answer options and how {answer_options} joins them.
type OptionSet struct {
	Options []Option `json:"options"`
	// Delimiter joins the option texts, default "\n".
	Delimiter string `json:"delimiter,omitempty"`
	// PrependDelimiter puts the delimiter before the first option too.
	PrependDelimiter bool `json:"prepend_delimiter,omitempty"`
}

// Option is one answer option.
type Option struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Weight int    `json:"weight"`
	// IgnoredForScale options (e.g. "don't know") score nothing.
	IgnoredForScale bool `json:"ignored_for_scale,omitempty"`
}

// Scale is a dimension items belong to.
type Scale struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Item is one question.
type Item struct {
	ID    string `json:"id"`
	Text  string `json:"text"`
	Scale string `json:"scale,omitempty"`
	// Reversed items score min+max-weight.
	Reversed bool `json:"reversed,omitempty"`
	// Options replace the questionnaire's default options for this item.
	Options *OptionSet `json:"options,omitempty"`
	// Order replaces questionnaire.order for this item (see OrderSettings); nil: the questionnaire's.
	Order *OrderSettings `json:"order,omitempty"`
	// Images are the pictures the item shows, as Persona.Images.
	Images []string `json:"images,omitempty"`
	// Variants are other wordings the item is also asked in (see Variant); Text is variant "original".
	Variants []Variant `json:"variants,omitempty"`
}

// RunSettings say how the grid runs. Zero values mean the defaults noted.
type RunSettings struct {
	// MaxConcurrency caps calls in flight inside one pass (default 8).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// MaxParallelPasses caps passes running at once across the fleet (default 2).
	MaxParallelPasses int `json:"max_parallel_passes,omitempty"`
	// OnError is warn (default), ignore or raise.
	OnError string `json:"on_error,omitempty"`
	// Cumulative gives each persona its own earlier questions and answers.
	Cumulative bool `json:"cumulative,omitempty"`
	// SeedPerCell sends each cell a seed of its own, derived from the spec's seed and the cell id (see
	// CallSeed); false sends every cell of a pass the pass's seed. Nil (a spec saved or sent as a workflow input
	// before the setting existed) means false, so such a run keeps its seeds when resumed; specfile.Parse
	// resolves a spec file that does not set it to true.
	SeedPerCell *bool `json:"seed_per_cell,omitempty"`
	// CallTimeout bounds one model call (default 60s).
	CallTimeout Duration `json:"call_timeout,omitempty"`
	// MaxAttempts is how often one cell is tried against transient failures (server errors, transport errors,
	// timeouts, malformed bodies) before it is recorded failed (default 10). Rate limits never use up tries.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// StallTimeout gives a model up when none of its cells finished for this long (default 15m).
	StallTimeout Duration `json:"stall_timeout,omitempty"`
	// ChunkSize splits a pass with more cells into several activities (default 5000; not in cumulative mode).
	ChunkSize int `json:"chunk_size,omitempty"`
	// Cache is the response cache policy of every model that sets none (default read_write).
	Cache CachePolicy `json:"cache,omitempty"`
	// ImageTransport is how pictures are sent to models that set none (default inline).
	ImageTransport ImageTransport `json:"image_transport,omitempty"`
	// Batch is the batch section of every model that has none (default: mode sync).
	Batch *BatchSettings `json:"batch,omitempty"`
	// Answer is the answer section of every model that has none (default: mode text).
	Answer *AnswerSettings `json:"answer,omitempty"`
}

// Defaults of RunSettings.
const (
	DefaultMaxConcurrency    = 8
	DefaultMaxParallelPasses = 2
	DefaultCallTimeout       = 60 * time.Second
	DefaultMaxAttempts       = 10
	DefaultStallTimeout      = 15 * time.Minute
	DefaultChunkSize         = 5000
)

// On-error policies.
const (
	OnErrorWarn   = "warn"
	OnErrorIgnore = "ignore"
	OnErrorRaise  = "raise"
)

// Duration is a time.Duration written as a Go duration string ("30s", "2m") in specs and JSON.
type Duration time.Duration

// MarshalJSON writes the duration as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30s"-style strings, or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want a number and a unit such as 30s or 2m", s)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration: want a string such as \"30s\" or a number of seconds")
	}
	*d = Duration(time.Duration(secs * float64(time.Second)))
	return nil
}
