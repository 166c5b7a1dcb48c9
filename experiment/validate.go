package experiment

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/silicolab/silico/suggest"
)

// Providers of models.
const (
	// ProviderOpenAI is any OpenAI-compatible server (OpenAI, Azure, Ollama, vLLM, proxies); the default.
	ProviderOpenAI = "openai"
	// ProviderSim is the built-in simulator.
	ProviderSim = "sim"
	// ProviderAnthropic is Anthropic's Messages API (and its Message Batches in batch mode).
	ProviderAnthropic = "anthropic"
	// ProviderGemini is Google's Gemini API: synchronous calls on its OpenAI-compatible endpoint, batches on its
	// native Batch API.
	ProviderGemini = "gemini"
)

// DefaultGeminiKeyEnv is the api_key_env of a model of provider gemini that names none: Gemini's API always
// needs a key, and this is the variable Google's own SDKs read.
const DefaultGeminiKeyEnv = "GEMINI_API_KEY"

// DefaultAnthropicKeyEnv is the api_key_env of a model of provider anthropic that names none: Anthropic's API
// always needs a key, and this is the variable its own tools read.
const DefaultAnthropicKeyEnv = "ANTHROPIC_API_KEY"

var (
	providers = []string{ProviderOpenAI, ProviderSim, ProviderAnthropic, ProviderGemini}
	onErrors  = []string{OnErrorWarn, OnErrorIgnore, OnErrorRaise}
	prompts   = []string{PromptChat, PromptNormal}
	roles     = []string{RoleSystem, RoleUser, RoleAssistant}
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// DefaultSeed is the seed of a spec that sets none.
const DefaultSeed = 42

// ApplyDefaults fills every zero value that stands for a default: seeds, model providers, the prompt, persona
// templates, option delimiters and run settings. It is idempotent.
func (s *Spec) ApplyDefaults() {
	if len(s.Seeds) == 0 {
		s.Seeds = []int64{DefaultSeed}
	}
	for i := range s.Models {
		m := &s.Models[i]
		if m.Provider == "" {
			m.Provider = ProviderOpenAI
		}
		if m.Provider == ProviderAnthropic && m.APIKeyEnv == "" {
			m.APIKeyEnv = DefaultAnthropicKeyEnv
		}
		if m.Provider == ProviderGemini && m.APIKeyEnv == "" {
			m.APIKeyEnv = DefaultGeminiKeyEnv
		}
		if m.ID == "" {
			m.ID = m.Name
		}
	}
	if s.Prompt.Type == "" && s.Prompt.Template == "" && len(s.Prompt.Messages) == 0 {
		s.Prompt = DefaultPrompt()
	}
	for i := range s.Personas {
		if s.Personas[i].Template == "" {
			s.Personas[i].Template = DefaultPersonaTemplate
		}
	}
	if s.Questionnaire.Options.Delimiter == "" {
		s.Questionnaire.Options.Delimiter = "\n"
	}
	for i := range s.Questionnaire.Items {
		if o := s.Questionnaire.Items[i].Options; o != nil && o.Delimiter == "" {
			o.Delimiter = "\n"
		}
	}
	if s.IsEmbed() {
		s.applyEmbedDefaults()
	}
	r := &s.Run
	if r.MaxConcurrency == 0 {
		r.MaxConcurrency = DefaultMaxConcurrency
	}
	if r.MaxParallelPasses == 0 {
		r.MaxParallelPasses = DefaultMaxParallelPasses
	}
	if r.OnError == "" {
		r.OnError = OnErrorWarn
	}
	if r.CallTimeout == 0 {
		r.CallTimeout = Duration(DefaultCallTimeout)
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.ChunkSize == 0 {
		r.ChunkSize = DefaultChunkSize
	}
	if r.StallTimeout == 0 {
		r.StallTimeout = Duration(DefaultStallTimeout)
	}
	if s.HasImages() {
		s.Image.applyDefaults()
	}
}

// Validate checks a resolved spec: every part of the grid present, ids unique, references resolved, numbers in
// range, enums known, templates free of unknown placeholders. Zero values that stand for defaults are accepted.
// It returns Errors (Field paths, no positions) listing every mistake. On success it also compiles the templates
// once, so Render is cheap; validate again after changing the spec.
func (s *Spec) Validate() error {
	errs := s.check()
	rt, terrs := s.compile()
	errs = append(errs, terrs...)
	if len(errs) > 0 {
		return errs
	}
	s.rt = rt
	return nil
}

// check holds every semantic check but the templates'.
func (s *Spec) check() Errors {
	var errs Errors
	if strings.TrimSpace(s.Name) == "" {
		errs.add("name", "missing: give the experiment a name")
	}
	seen := map[int64]int{}
	for i, sd := range s.Seeds {
		if j, dup := seen[sd]; dup {
			errs.add(fmt.Sprintf("seeds[%d]", i), "duplicate seed %d, already entry %d; each seed must appear once", sd, j)
		}
		seen[sd] = i
	}
	if s.BudgetUSD < 0 {
		errs.add("budget_usd", "%v is negative; want a number of US dollars ≥ 0 (0: no budget)", s.BudgetUSD)
	}
	s.checkModels(&errs)
	s.checkPrompt(&errs)
	needPersonas, needItems := s.checkKind(&errs)
	if needPersonas {
		s.checkPersonas(&errs)
	}
	if needItems {
		// Answer options matter only where prompts are rendered.
		s.checkQuestionnaire(&errs, !s.IsEmbed() || s.Embed.Texts == EmbedPrompts)
	}
	s.checkRun(&errs)
	s.checkBatches(&errs)
	s.checkAnswers(&errs)
	s.checkOrders(&errs)
	s.checkVariants(&errs)
	s.checkSimulator(&errs)
	s.checkImages(&errs)
	s.checkReference(&errs)
	s.checkAnalysis(&errs)
	return errs
}

func (s *Spec) checkSimulator(errs *Errors) {
	sim := s.Simulator
	if sim == nil {
		return
	}
	if sim.Latency < 0 {
		errs.add("simulator.latency", "negative; want a duration such as \"300ms\"")
	}
	if sim.Jitter < 0 {
		errs.add("simulator.jitter", "negative; want a duration such as \"200ms\"")
	}
	if sim.BatchTime < 0 || sim.BatchTime > Duration(24*time.Hour) {
		errs.add("simulator.batch_time", "%v is out of range; want a duration from 0 (at once) to 24h, such as \"2m\"", time.Duration(sim.BatchTime))
	}
	if sim.BatchEnqueuedTokens < 0 {
		errs.add("simulator.batch_enqueued_tokens", "%d is negative; want a number of tokens, or 0 for no limit", sim.BatchEnqueuedTokens)
	}
	if sim.Sampling != "" && !slices.Contains(SimSamplings(), sim.Sampling) {
		errs.add("simulator.sampling", "unknown sampling %q%s; want %s", sim.Sampling, suggest.DidYouMean(sim.Sampling, SimSamplings()), oneOf(SimSamplings()))
	}
	if b := sim.PositionBias; b != nil {
		if b.Position != PositionFirst && b.Position != PositionLast {
			errs.add("simulator.position_bias.position", "%q; want first or last (the option shown first or last)", b.Position)
		}
		if b.Strength < 0 || b.Strength > 1 || math.IsNaN(b.Strength) {
			errs.add("simulator.position_bias.strength", "%v is out of range; want the share of answers moved to that position, from 0 to 1", b.Strength)
		}
	}
	for _, text := range slices.Sorted(maps.Keys(sim.Preferences)) {
		if w := sim.Preferences[text]; w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			errs.add("simulator.preferences."+text, "weight %v; want a number >= 0 (0: never answered by meaning)", w)
		}
	}
	nonNegative(errs, "simulator.rpm", sim.RPM, "requests per minute ≥ 0 (0: unlimited)")
	nonNegative(errs, "simulator.tpm", sim.TPM, "tokens per minute ≥ 0 (0: unlimited)")
	f := sim.Faults
	for _, r := range []struct {
		key string
		v   float64
	}{{"rate_limit", f.RateLimit}, {"quota", f.Quota}, {"server_500", f.Server500}, {"server_503", f.Server503},
		{"hang", f.Hang}, {"drop", f.Drop}, {"malformed", f.Malformed}, {"length", f.Length},
		{"content_filter", f.ContentFilter}} {
		if r.v < 0 || r.v > 1 || math.IsNaN(r.v) {
			errs.add("simulator.faults."+r.key, "%v is out of range; want a rate from 0 to 1", r.v)
		}
	}
	if o := sim.Outage; o != nil {
		if o.After < 0 {
			errs.add("simulator.outage.after", "negative; want a duration such as \"10s\" from the first model call")
		}
		if o.For <= 0 {
			errs.add("simulator.outage.for", "%v; want a positive duration such as \"90s\"", time.Duration(o.For))
		}
		kind := o.Kind
		if kind == "" {
			kind = OutageStatus
		}
		switch {
		case !contains(outageKinds, kind):
			errs.add("simulator.outage.kind", "unknown outage kind %q%s; want %s", o.Kind, suggest.DidYouMean(o.Kind, outageKinds), oneOf(outageKinds))
		case kind == OutageRefuse && o.Status != 0:
			errs.add("simulator.outage.status", "%d with kind refuse; a refused connection has no status, leave it out", o.Status)
		case kind != OutageRefuse && o.Status != 0 && !slices.Contains(outageStatuses[kind], o.Status):
			errs.add("simulator.outage.status", "%d; want one of %v for kind %s (0: %d)", o.Status, outageStatuses[kind], kind,
				map[string]int{OutageStatus: 503, OutageHTML: 502}[kind])
		}
	}
}

// checkID reports an empty id, one with a '/' (cell ids join ids with '/'), and duplicates.
func checkID(errs *Errors, seen map[string]int, path, kind, id string, i int) {
	switch {
	case strings.TrimSpace(id) == "":
		errs.add(path+".id", "missing: every %s needs a non-empty id", kind)
		return
	case strings.Contains(id, "/"):
		errs.add(path+".id", "%q contains '/'; %s ids may not contain '/' (cell ids are model/seed/item/persona)", id, kind)
	}
	if j, dup := seen[id]; dup {
		errs.add(path+".id", "duplicate %s id %q, already used by entry %d; ids must be unique", kind, id, j)
		return
	}
	seen[id] = i
}

func nonNegative(errs *Errors, path string, v int, what string) {
	if v < 0 {
		errs.add(path, "%d is negative; want %s", v, what)
	}
}

func (s *Spec) checkModels(errs *Errors) {
	if len(s.Models) == 0 {
		errs.add("models", "empty: list at least one model")
	}
	seen := map[string]int{}
	for i, m := range s.Models {
		p := fmt.Sprintf("models[%d]", i)
		id := m.ID
		if id == "" {
			id = m.Name
		}
		checkID(errs, seen, p, "model", id, i)
		if strings.TrimSpace(m.Name) == "" {
			errs.add(p+".name", "missing: the model name sent to the provider, e.g. \"gpt-4o-mini\"")
		}
		if m.Provider != "" && !contains(providers, m.Provider) {
			errs.add(p+".provider", "unknown provider %q%s; want %s", m.Provider, suggest.DidYouMean(m.Provider, providers), oneOf(providers))
		}
		if m.BaseURL != "" {
			u, err := url.Parse(m.BaseURL)
			switch secret := BaseURLSecret(m.BaseURL); {
			case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
				errs.add(p+".base_url", "%q is not an http(s) URL; want e.g. \"http://localhost:11434/v1\"", publicURL(m.BaseURL))
			case secret != "":
				errs.add(p+".base_url", "carries a credential in its %s; a URL is stored in the run's history and logs: "+
					"put the key in an environment variable of the worker and name that variable with api_key_env, e.g. api_key_env: OPENAI_API_KEY", secret)
			}
		}
		if m.APIKeyEnv != "" && !envName.MatchString(m.APIKeyEnv) {
			errs.add(p+".api_key_env", "%q is not an environment variable name; want the name of the variable that holds the key, e.g. \"OPENAI_API_KEY\" (never the key itself)", redact(m.APIKeyEnv))
		}
		checkParams(errs, p, m)
		if m.Provider == ProviderAnthropic {
			s.checkAnthropic(errs, p, m)
		}
		if m.Provider == ProviderGemini && s.IsEmbed() && s.BatchSettings(m).Mode == BatchBatch {
			errs.add(p+".batch.mode", "provider gemini embeds only synchronously (its OpenAI-compatible endpoint): silico batches embeddings in the OpenAI format alone; use mode: sync")
		}
		nonNegative(errs, p+".max_concurrency", m.MaxConcurrency, "a number of calls ≥ 0 (0: only run.max_concurrency)")
		checkCachePolicy(errs, p+".cache", m.Cache)
		nonNegative(errs, p+".rpm", m.RPM, "requests per minute ≥ 0 (0: unlimited)")
		nonNegative(errs, p+".tpm", m.TPM, "tokens per minute ≥ 0 (0: unlimited)")
		if m.Burst < 0 || m.Burst > 10 || math.IsNaN(m.Burst) {
			errs.add(p+".burst", "%v is out of range; want a fraction of one minute's limit in (0, 10] (0: 1.0)", m.Burst)
		}
		if pr := m.Price; pr != nil {
			if pr.InputPerMTok < 0 || math.IsNaN(pr.InputPerMTok) {
				errs.add(p+".price.input_per_mtok", "%v is negative; want US dollars per million input tokens ≥ 0", pr.InputPerMTok)
			}
			if pr.OutputPerMTok < 0 || math.IsNaN(pr.OutputPerMTok) {
				errs.add(p+".price.output_per_mtok", "%v is negative; want US dollars per million output tokens ≥ 0", pr.OutputPerMTok)
			}
		}
	}
}

// redact shortens what might be a secret to its first characters.
func redact(s string) string {
	if len(s) <= 6 {
		return s
	}
	return s[:3] + "…"
}

func (s *Spec) checkPrompt(errs *Errors) {
	s.checkPromptAt(errs, "prompt", s.effectivePrompt())
}

// checkPromptAt checks prompt p, whose fields are at path.
func (s *Spec) checkPromptAt(errs *Errors, path string, p Prompt) {
	switch p.Type {
	case PromptChat:
		if p.Template != "" {
			errs.add(path+".template", "a chat prompt takes messages, not a template; use type \"normal\" for a single template")
		}
		if len(p.Messages) == 0 {
			errs.add(path+".messages", "empty: a chat prompt needs messages, at least one with role \"user\"")
		}
		users := 0
		for i, m := range p.Messages {
			if !contains(roles, m.Role) {
				errs.add(fmt.Sprintf("%s.messages[%d].role", path, i), "unknown role %q%s; want %s", m.Role, suggest.DidYouMean(m.Role, roles), oneOf(roles))
			}
			if m.Role == RoleUser {
				users++
			}
		}
		if len(p.Messages) > 0 && users == 0 {
			errs.add(path+".messages", "no message with role \"user\"; a chat prompt needs one")
		}
	case PromptNormal:
		if len(p.Messages) > 0 {
			errs.add(path+".messages", "a normal prompt takes a template, not messages; use type \"chat\" for messages")
		}
		if strings.TrimSpace(p.Template) == "" {
			errs.add(path+".template", "missing: a normal prompt needs a template, e.g. \"{question}\\n{answer_options}\"")
		}
	default:
		errs.add(path+".type", "unknown prompt type %q%s; want %s", p.Type, suggest.DidYouMean(p.Type, prompts), oneOf(prompts))
	}
}

func (s *Spec) checkPersonas(errs *Errors) {
	if len(s.Personas) == 0 {
		errs.add("personas", "empty: list at least one persona")
	}
	seen := map[string]int{}
	for i, p := range s.Personas {
		path := fmt.Sprintf("personas[%d]", i)
		checkID(errs, seen, path, "persona", p.ID, i)
		for k := range p.Attributes {
			if k == "" || strings.ContainsAny(k, "{}") {
				errs.add(path+".attributes", "attribute name %q: want a non-empty name without braces", k)
			}
		}
	}
}

func (s *Spec) checkQuestionnaire(errs *Errors, needOptions bool) {
	q := &s.Questionnaire
	needDefault := false
	for _, it := range q.Items {
		if it.Options == nil {
			needDefault = needOptions
		}
	}
	if len(q.Options.Options) > 0 || needDefault {
		checkOptions(errs, "questionnaire.options", q.Options)
	}
	scales := map[string]int{}
	for i, sc := range q.Scales {
		path := fmt.Sprintf("questionnaire.scales[%d]", i)
		checkID(errs, scales, path, "scale", sc.ID, i)
		if sc.ID == Overall {
			errs.add(path+".id", "%q is reserved: reference_scales.csv names its lines over every item so; choose another scale id", sc.ID)
		}
	}
	if len(q.Items) == 0 {
		errs.add("questionnaire.items", "empty: list at least one item")
	}
	ids := make([]string, 0, len(q.Scales))
	for _, sc := range q.Scales {
		ids = append(ids, sc.ID)
	}
	seen := map[string]int{}
	for i, it := range q.Items {
		path := fmt.Sprintf("questionnaire.items[%d]", i)
		checkID(errs, seen, path, "item", it.ID, i)
		if it.ID == Overall {
			errs.add(path+".id", "%q is reserved: order_bias.csv and compare.csv name their lines over every item so; choose another item id", it.ID)
		}
		if strings.TrimSpace(it.Text) == "" {
			errs.add(path+".text", "missing: the question of the item")
		}
		if len(q.Scales) > 0 && it.Scale != "" {
			if _, ok := scales[it.Scale]; !ok {
				errs.add(path+".scale", "unknown scale %q%s; declared scales: %s", it.Scale, suggest.DidYouMean(it.Scale, ids), oneOf(ids))
			}
		}
		if it.Options != nil {
			checkOptions(errs, path+".options", *it.Options)
		}
	}
}

func checkOptions(errs *Errors, path string, o OptionSet) {
	if len(o.Options) == 0 {
		errs.add(path, "missing answer options: list at least one option ({id, text, weight})")
		return
	}
	seen := map[string]int{}
	// enums are the labels the texts show (an order moves them among the options, it shows no other):
	// a model names an option by its label, so two options showing one would be one answer.
	enums := map[string]int{}
	for i, opt := range o.Options {
		p := fmt.Sprintf("%s.options[%d]", path, i)
		checkID(errs, seen, p, "option", opt.ID, i)
		if strings.TrimSpace(opt.Text) == "" {
			errs.add(p+".text", "missing: the option text shown in {answer_options}")
		}
		e := strings.ToLower(shownEnum(opt.Text))
		if e == "" {
			continue
		}
		if j, dup := enums[e]; dup {
			errs.add(p+".text", "%q starts with the label %s, as options[%d] does: a model answering %s could mean either; number the options apart", opt.Text, shownEnum(opt.Text), j, shownEnum(opt.Text))
			continue
		}
		enums[e] = i
	}
}

func (s *Spec) checkRun(errs *Errors) {
	r := s.Run
	nonNegative(errs, "run.max_concurrency", r.MaxConcurrency, fmt.Sprintf("a number of calls ≥ 1 (0: default %d)", DefaultMaxConcurrency))
	nonNegative(errs, "run.max_parallel_passes", r.MaxParallelPasses, fmt.Sprintf("a number of passes ≥ 1 (0: default %d)", DefaultMaxParallelPasses))
	nonNegative(errs, "run.max_attempts", r.MaxAttempts, fmt.Sprintf("a number of tries of one cell ≥ 1 (0: default %d)", DefaultMaxAttempts))
	nonNegative(errs, "run.chunk_size", r.ChunkSize, fmt.Sprintf("a number of cells ≥ 1 (0: default %d)", DefaultChunkSize))
	if r.CallTimeout < 0 {
		errs.add("run.call_timeout", "%v is negative; want a duration such as \"30s\" (0: default %v)", time.Duration(r.CallTimeout), DefaultCallTimeout)
	}
	if r.StallTimeout < 0 {
		errs.add("run.stall_timeout", "%v is negative; want a duration such as \"15m\" (0: default %v)", time.Duration(r.StallTimeout), DefaultStallTimeout)
	}
	checkCachePolicy(errs, "run.cache", r.Cache)
	if r.OnError != "" && !contains(onErrors, r.OnError) {
		errs.add("run.on_error", "unknown policy %q%s; want %s", r.OnError, suggest.DidYouMean(r.OnError, onErrors), oneOf(onErrors))
	}
	if r.Cumulative {
		p := s.effectivePrompt()
		if p.Type != PromptChat || len(p.Messages) < 2 || p.Messages[0].Role != RoleSystem || p.Messages[1].Role != RoleUser {
			errs.add("run.cumulative", "cumulative mode needs a chat prompt whose first message has role \"system\" and the second role \"user\" (earlier answers go between them)")
		}
	}
}

// secretParams are query parameters that carry credentials, compared after lower-casing and removing '-' and
// '_' ("api-key", "API_KEY" and "apikey" are one name). Names ending in "key", "token", "secret", "password" or
// "signature" count too (x-goog-api-key, sessiontoken, ...); "api-version" and the like do not.
var secretParams = []string{"key", "auth", "authorization", "bearer", "sig", "code", "pass", "passwd", "pwd", "credential", "credentials"}

var secretSuffixes = []string{"key", "token", "secret", "password", "signature"}

// BaseURLSecret reports where a base URL carries a credential: "user info" for user:password@host, "query
// parameter \"key\"" for ?key=..., "" when it carries none. A key belongs in the worker's environment (see
// api_key_env): a URL is stored in the spec, the workflow history and the logs.
func BaseURLSecret(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return ""
	}
	if u.User != nil {
		return "user info"
	}
	for name := range u.Query() {
		n := strings.NewReplacer("-", "", "_", "", ".", "").Replace(strings.ToLower(name))
		if slices.Contains(secretParams, n) {
			return fmt.Sprintf("query parameter %q", name)
		}
		for _, suf := range secretSuffixes {
			if strings.HasSuffix(n, suf) {
				return fmt.Sprintf("query parameter %q", name)
			}
		}
	}
	return ""
}

// publicURL is raw without user info, query and fragment: what an error message may show of a base URL.
func publicURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return redact(raw)
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
