package llm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/silicolab/silico/errclass"
)

// Error is a classified failure of a model call. Client.Chat returns only *Error values; use errors.As to
// reach it through wrapping. Its text never contains an API key.
type Error struct {
	// Class decides retrying (errclass.Class.Retryable) and whether the pass can go on; see errclass.Table.
	Class errclass.Class
	// Status is the HTTP status of the response, 0 when none arrived.
	Status int
	// Code is the provider's error code or type ("rate_limit_exceeded", "insufficient_quota"), if any.
	Code string
	// Message is the provider's message or a description of the transport failure, secrets removed.
	Message string
	// RetryAfter is how long the provider asked us to wait (Retry-After, retry-after-ms or, for a 429, the
	// x-ratelimit-reset-* header of the exhausted limit). Zero when not given.
	RetryAfter time.Duration
	// Exhausted says the response's x-ratelimit-remaining-requests or -tokens was 0: the account's budget of the
	// window is used up, so a 429 with it is the account's limit, not a call the provider shed.
	Exhausted bool

	cause error
}

// Error describes the failure: class, status, code, message and the requested wait.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	b.WriteString(string(e.Class))
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d", e.Status)
		if e.Code != "" {
			fmt.Fprintf(&b, ", %s", e.Code)
		}
		b.WriteString(")")
	} else if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Unwrap returns the underlying error (a go-openai, net or context error), so errors.Is(err,
// context.DeadlineExceeded) and errors.As(err, **openai.APIError) keep working.
func (e *Error) Unwrap() error { return e.cause }

// isQuotaCode reports the error codes and types of a 429 that waiting will not cure.
func isQuotaCode(s string) bool {
	switch s {
	case "insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "quota_exceeded":
		return true
	}
	return false
}

// maxMessage bounds Error.Message; proxies answer errors with whole HTML pages.
const maxMessage = 512

// Classify turns any error of a model call into an *Error; nil stays nil, an *Error (anywhere in the chain) is
// returned as it is.
//
// HTTP errors: 429 with a quota or billing code (or OpenAI's "exceeded your current quota"
// message) is QuotaExhausted, any other 429 RateLimited; 5xx ServerError; 401 and 403 Auth; 408 and 425
// Transport; every other 4xx InvalidRequest. Without a status: timeouts (context.DeadlineExceeded from the
// per-call timeout, net.Error timeouts), refused or reset connections, EOF, io.ErrUnexpectedEOF and truncated
// or malformed JSON bodies are Transport, and go-openai's refusals to build a request (its request validation,
// ErrChatCompletionInvalidModel, ...) are InvalidRequest.
//
// Any other error is Transport: an unknown failure is assumed transient, because retrying it costs only time
// (bounded by the pass's maximum attempts), while wrongly calling it permanent would record a cell as failed
// for good.
//
// context.Canceled is classified Transport too. Classify cannot know whether the parent context was cancelled
// (the activity is stopping: nothing should be recorded) or only the call's own context; callers check their
// ctx.Err() before classifying, and a cancelled call is never recorded as a permanent failure of its cell.
//
// Classify sees no HTTP headers, so its RetryAfter is zero; Client.Chat fills it in.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	out := &Error{Class: errclass.Transport, cause: err, Message: truncate(err.Error())}

	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0:
		out.Status = apiErr.HTTPStatusCode
		out.Code = codeString(apiErr.Code)
		if out.Code == "" {
			out.Code = apiErr.Type
		}
		out.Message = truncate(apiErr.Message)
		out.Class = classOfStatus(out.Status, out.Code, apiErr.Type, apiErr.Message)
	case errors.As(err, &reqErr):
		// The body was not a JSON error object: a proxy page, plain text, or a truncated body.
		out.Status = reqErr.HTTPStatusCode
		body := strings.TrimSpace(string(reqErr.Body))
		out.Message = truncate(body)
		if out.Message == "" && reqErr.Err != nil {
			out.Message = truncate(reqErr.Err.Error())
		}
		out.Class = classOfStatus(out.Status, "", "", body)
	case isLocalRefusal(err):
		out.Class = errclass.InvalidRequest
	default:
		out.Class = errclass.Transport
		if d := transportDetail(err); d != "" {
			out.Code = d
		}
	}
	return out
}

// classOfStatus maps an HTTP status (and, for 429, the code, type and message) to a class.
func classOfStatus(status int, code, typ, msg string) errclass.Class {
	switch {
	case status == http.StatusTooManyRequests:
		if isQuotaCode(code) || isQuotaCode(typ) || strings.Contains(msg, "insufficient_quota") ||
			strings.Contains(strings.ToLower(msg), "exceeded your current quota") {
			return errclass.QuotaExhausted
		}
		return errclass.RateLimited
	case status >= 500:
		return errclass.ServerError
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return errclass.Auth
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly:
		return errclass.Transport
	case status >= 400:
		return errclass.InvalidRequest
	default:
		// A 1xx/2xx/3xx that still failed: the body could not be read or decoded.
		return errclass.Transport
	}
}

// isLocalRefusal reports errors go-openai returns before sending anything: the request itself is wrong, and
// sending it again cannot help.
func isLocalRefusal(err error) bool {
	for _, target := range []error{
		openai.ErrChatCompletionInvalidModel,
		openai.ErrChatCompletionStreamNotSupported,
		openai.ErrContentFieldsMisused,
		openai.ErrReasoningModelMaxTokensDeprecated,
		openai.ErrReasoningModelLimitationsLogprobs,
		openai.ErrReasoningModelLimitationsOther,
		openai.ErrReasoningEffortUnsupported,
		openai.ErrReasoningToolsRequireResponses,
		openai.ErrReasoningSamplingUnsupported,
		openai.ErrO1BetaLimitationsMessageTypes,
		openai.ErrO1BetaLimitationsTools,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var me *json.MarshalerError
	var ue *json.UnsupportedValueError
	var ut *json.UnsupportedTypeError
	return errors.As(err, &me) || errors.As(err, &ue) || errors.As(err, &ut)
}

// Codes of transport failures that mean no connection to the endpoint could be made at all (Error.Code with
// Status 0).
const (
	CodeConnectionRefused = "connection_refused"
	CodeDNS               = "dns_error"
	CodeTLS               = "tls_error"
)

// transportDetail names the kind of a transport failure for Error.Code ("timeout", "connection_refused", ...).
func transportDetail(err error) string {
	var ne net.Error
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var dns *net.DNSError
	var rh tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &dns):
		return CodeDNS
	case errors.As(err, &rh), errors.As(err, &cv), errors.As(err, &ua), errors.As(err, &hn), errors.As(err, &ci):
		return CodeTLS
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return CodeConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection_reset"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "truncated"
	case errors.As(err, &se), errors.As(err, &te):
		return "malformed_body"
	}
	return ""
}

// codeString renders go-openai's APIError.Code (a string, a number or nil) as text.
func codeString(c any) string {
	switch v := c.(type) {
	case nil:
		return ""
	case string:
		return v
	case int:
		if v == 0 {
			// go-openai decodes "code": null as the number 0.
			return ""
		}
		return strconv.Itoa(v)
	default:
		return fmt.Sprint(v)
	}
}

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	// Cut on a rune boundary.
	cut := maxMessage
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
