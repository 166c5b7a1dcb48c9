// Package llm calls OpenAI-compatible chat endpoints for silico: one go-openai client per endpoint, the
// classification of every failure into the classes of the README's retry rules, token counting with offline tiktoken
// vocabularies, and a small price table.
//
// Nothing here retries. go-openai itself retries nothing either: a call is exactly one HTTP request, and the
// decision to retry (a cell inside its seed pass, or the whole pass under Temporal's retry policy) belongs to the
// caller, guided by errclass.Class.Retryable and Error.RetryAfter.
//
// API keys are read from the worker's environment by the Registry and live only inside a Client; they never
// appear in an error message or in a Client's or Registry's printed form.
package llm
