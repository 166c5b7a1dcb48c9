package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/silicolab/silico/logging"
)

// logFileName is the log file's name in the state dir.
const logFileName = "starter.log"

// sessionLogs are a session's loggers. The log file (--log-file, default <state-dir>/starter.log, appended to by
// every command) gets every entry at --log-level of silico, the Temporal SDK and the embedded server. The
// terminal gets silico's own warnings and errors, and each distinct error of the SDK (an activity attempt that
// failed, a workflow task that failed) as one line in silico's words that names the file: the SDK's and the
// server's warnings and their raw lines, which a busy machine multiplies (the server's "Frontend is not healthy
// yet" while it starts), stay in the file.
type sessionLogs struct {
	own, sdk, server *zap.Logger
	file             *os.File
}

// openLogs opens the log file f names and builds the loggers over it and stderr. When the file cannot be opened
// (a read-only directory), the log goes to stderr as it is, with a note.
func openLogs(f *connFlags, stderr io.Writer) (*sessionLogs, error) {
	path := f.log.file
	if path == "" {
		path = filepath.Join(f.store.stateDir, logFileName)
	}
	var w io.Writer = stderr
	file, err := openLogFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "note: the log goes to the terminal: %v\n", err)
	} else {
		w = file
	}
	fileCore, err := logging.NewCore(f.log.format, f.log.level, w)
	if err != nil {
		if file != nil {
			_ = file.Close()
		}
		return nil, err
	}
	terminal, err := logging.NewCore(logging.FormatConsole, "warn", stderr)
	if err != nil {
		return nil, err
	}
	l := &sessionLogs{file: file, server: zap.New(fileCore)}
	if file == nil { // the file core writes to the terminal already
		l.own, l.sdk = zap.New(fileCore), zap.New(fileCore)
		return l, nil
	}
	l.own = zap.New(zapcore.NewTee(fileCore, terminal))
	l.sdk = zap.New(zapcore.NewTee(fileCore, logging.OneLine(stderr, path)))
	return l, nil
}

// openLogFile opens path for appending, making its directory.
func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return file, nil
}

// close flushes the loggers and closes the file; nil (a session built without open) has nothing to close.
func (l *sessionLogs) close() {
	if l == nil {
		return
	}
	_ = l.own.Sync()
	_ = l.sdk.Sync()
	_ = l.server.Sync()
	if l.file != nil {
		_ = l.file.Close()
	}
}
