// Package logging builds silico's zap loggers and adapts them to the Temporal
// SDK's logger interface.
package logging

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Formats accepted by New.
const (
	FormatJSON    = "json"
	FormatConsole = "console"
)

// New returns a logger that writes entries at level and above to w, encoded as
// format: "json" (one object per line) or "console" (human-readable columns).
// level is a zap level name: "debug", "info", "warn", "error", "dpanic",
// "panic" or "fatal"; "" means "info". Writes to w are serialized, so w need not
// be safe for concurrent use.
func New(format, level string, w io.Writer) (*zap.Logger, error) {
	core, err := NewCore(format, level, w)
	if err != nil {
		return nil, err
	}
	return zap.New(core, zap.AddCaller(), zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w)))), nil
}

// NewCore is New's core, for loggers that write to several places (zapcore.NewTee).
func NewCore(format, level string, w io.Writer) (zapcore.Core, error) {
	if w == nil {
		return nil, fmt.Errorf("logging: nil writer")
	}
	lvl := zapcore.InfoLevel
	if level != "" {
		var err error
		if lvl, err = zapcore.ParseLevel(level); err != nil {
			return nil, fmt.Errorf("logging: level %q: want debug, info, warn or error: %w", level, err)
		}
	}

	var enc zapcore.Encoder
	switch format {
	case FormatJSON:
		cfg := zap.NewProductionEncoderConfig()
		cfg.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(cfg)
	case FormatConsole:
		cfg := zap.NewDevelopmentEncoderConfig()
		cfg.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewConsoleEncoder(cfg)
	default:
		return nil, fmt.Errorf("logging: format %q: want %q or %q", format, FormatJSON, FormatConsole)
	}

	return zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), lvl), nil
}

// Temporal adapts z to the Temporal SDK's log.Logger, for client.Options.Logger
// and worker loggers. Key-value pairs become zap fields; a key that is not a
// string is formatted with %v, and a dangling value is logged under "!BADKEY".
// Caller information points at the code that called the adapter, not at the
// adapter itself. The result also implements log.WithLogger and
// log.WithSkipCallers.
func Temporal(z *zap.Logger) log.Logger {
	return &temporalLogger{zl: z.WithOptions(zap.AddCallerSkip(1))}
}

// temporalLogger implements log.Logger over zap. It is immutable and safe for
// concurrent use.
type temporalLogger struct {
	zl *zap.Logger
}

var (
	_ log.Logger          = (*temporalLogger)(nil)
	_ log.WithLogger      = (*temporalLogger)(nil)
	_ log.WithSkipCallers = (*temporalLogger)(nil)
)

// Debug logs msg at debug level.
func (l *temporalLogger) Debug(msg string, keyvals ...any) { l.zl.Debug(msg, fields(keyvals)...) }

// Info logs msg at info level.
func (l *temporalLogger) Info(msg string, keyvals ...any) { l.zl.Info(msg, fields(keyvals)...) }

// Warn logs msg at warn level.
func (l *temporalLogger) Warn(msg string, keyvals ...any) { l.zl.Warn(msg, fields(keyvals)...) }

// Error logs msg at error level, but for an activity attempt that ended because its context was cancelled: the
// SDK logs every attempt that returns an error as "Activity error." at error level, and one that returns
// context.Canceled (its run cancelled, its worker stopping) did what cancelling asked. That one is logged at
// debug level as "Activity canceled.", with the same fields.
func (l *temporalLogger) Error(msg string, keyvals ...any) {
	if msg == sdkActivityError && canceled(keyvals) {
		l.zl.Debug("Activity canceled.", fields(keyvals)...)
		return
	}
	l.zl.Error(msg, fields(keyvals)...)
}

// sdkActivityError is the message the Temporal SDK logs an activity attempt's error under.
const sdkActivityError = "Activity error."

// canceled reports whether the "Error" value of keyvals is a context cancellation.
func canceled(keyvals []any) bool {
	for i := 0; i+1 < len(keyvals); i += 2 {
		if k, _ := keyvals[i].(string); k == "Error" {
			err, _ := keyvals[i+1].(error)
			return errors.Is(err, context.Canceled)
		}
	}
	return false
}

// With returns a child logger that adds keyvals to every entry.
func (l *temporalLogger) With(keyvals ...any) log.Logger {
	return &temporalLogger{zl: l.zl.With(fields(keyvals)...)}
}

// WithCallerSkip returns a child logger that skips depth more stack frames
// when reporting the caller.
func (l *temporalLogger) WithCallerSkip(depth int) log.Logger {
	return &temporalLogger{zl: l.zl.WithOptions(zap.AddCallerSkip(depth))}
}

// fields converts alternating keys and values into zap fields.
func fields(keyvals []any) []zap.Field {
	if len(keyvals) == 0 {
		return nil
	}
	out := make([]zap.Field, 0, (len(keyvals)+1)/2)
	for i := 0; i < len(keyvals); i += 2 {
		if i+1 == len(keyvals) {
			out = append(out, zap.Any("!BADKEY", keyvals[i]))
			break
		}
		key, ok := keyvals[i].(string)
		if !ok {
			key = fmt.Sprintf("%v", keyvals[i])
		}
		out = append(out, zap.Any(key, keyvals[i+1]))
	}
	return out
}
