package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/workflows"
)

// maxInlineSpec is the largest spec the starter sends inside a workflow input. Temporal refuses payloads over
// 2 MB by default ("Blob data size exceeds limit"); the rest of the input and its encoding need a little room.
const maxInlineSpec = 2<<20 - 64<<10

// tooLargeNote says what to do with a spec too large for a workflow input, or "" when it fits.
func tooLargeNote(in workflows.Input) string {
	if len(in.Spec) <= maxInlineSpec {
		return ""
	}
	return fmt.Sprintf("the resolved spec is %s, more than a Temporal workflow input may carry (2 MB): `starter run` "+
		"passes it by reference through the results store (with --address, name the workers' store with --store or %s); "+
		"`temporal workflow start --input-file` cannot start it", bytesSize(int64(len(in.Spec))), envStore)
}

// byReference saves in's spec in st under run id, exactly as PrepareRun would save it, and returns the input that
// refers to it: the run id, the output and the saved spec's digest. The history then holds a few hundred bytes
// whatever the spec's size.
func byReference(ctx context.Context, st store.Store, id string, in workflows.Input) (workflows.Input, error) {
	_, digest, err := activities.SaveSpec(ctx, st, id, in.Spec)
	if errors.Is(err, store.ErrSpecConflict) {
		return in, fmt.Errorf("run %s: %w; start a fresh run with --new", id, err)
	}
	if err != nil {
		return in, err
	}
	return workflows.Input{RunID: id, Output: in.Output, SpecDigest: digest}, nil
}

// startInput is the workflow input that starts run id of in's spec: by reference when the session can reach the
// results store the workers use (always in embedded mode; with --address when --store or SILICO_STORE names it),
// else inline, which a spec too large for a workflow input cannot be.
func startInput(ctx context.Context, sess *session, id string, in workflows.Input) (workflows.Input, error) {
	if sess.store == nil && (sess.flags.storePath != "" || os.Getenv(envStore) != "") {
		if err := sess.openStore(ctx); err != nil {
			return in, err
		}
	}
	if sess.store != nil {
		return byReference(ctx, sess.store, id, in)
	}
	if note := tooLargeNote(in); note != "" {
		return in, withCode(exitUsage, errors.New(note))
	}
	return in, nil
}
