package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/experiment"
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

// byReference saves raw (a workflow input's spec) in st under run id, exactly as PrepareRun would save it, and
// returns the input that refers to it (the run id, the output and the saved spec's digest) and the spec as it was
// saved. The history then holds a few hundred bytes whatever the spec's size. specs, when not nil, is the cache of
// this process's worker, which then uses the spec decoded here instead of decoding the saved bytes again. It takes
// the spec's bytes, not the Input, so that nothing holds them once they are decoded.
func byReference(ctx context.Context, st store.Store, specs *activities.SpecCache, id string, raw json.RawMessage,
	output string) (workflows.Input, *experiment.Spec, error) {
	s, digest, err := activities.SaveSpec(ctx, st, id, raw)
	if errors.Is(err, store.ErrSpecConflict) {
		return workflows.Input{}, nil, fmt.Errorf("run %s: %w; start a fresh run with --new", id, err)
	}
	if err != nil {
		return workflows.Input{}, nil, err
	}
	if specs != nil {
		specs.Put(id, s)
	}
	return workflows.Input{RunID: id, Output: output, SpecDigest: digest}, s, nil
}

// startInput is the workflow input that starts run id of spec, writing to output: by reference when the session
// can reach the results store the workers use (always in embedded mode; with --address when --store or
// SILICO_STORE names it), else inline, which a spec too large for a workflow input cannot be. It returns the spec
// the run has from now on: by reference the one saved, which replaces spec, so that a large spec is held once, not
// twice, from its encoding on (the caller must not keep spec).
func startInput(ctx context.Context, sess *session, id string, spec *experiment.Spec, output string) (workflows.Input, *experiment.Spec, error) {
	if sess.store == nil && (sess.flags.storePath != "" || os.Getenv(envStore) != "") {
		if err := sess.openStore(ctx); err != nil {
			return workflows.Input{}, nil, err
		}
	}
	if sess.store != nil {
		// spec's last use on this path: it can go while its encoding is decoded and saved.
		in, err := workflows.NewInput(spec, "", output)
		if err != nil {
			return workflows.Input{}, nil, err
		}
		return byReference(ctx, sess.store, sess.specs, id, in.Spec, output)
	}
	in, err := workflows.NewInput(spec, "", output)
	if err != nil {
		return workflows.Input{}, nil, err
	}
	if note := tooLargeNote(in); note != "" {
		return in, spec, withCode(exitUsage, errors.New(note))
	}
	return in, spec, nil
}
