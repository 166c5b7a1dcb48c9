package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// maxInlineSpec is the largest spec the starter sends inside a workflow input. Temporal refuses payloads over
// 2 MB by default ("Blob data size exceeds limit"); the rest of the input and its encoding need a little room.
const maxInlineSpec = 2<<20 - 64<<10

// tooLargeNote says what to do with a spec too large for a workflow input, or "" when it fits.
func tooLargeNote(in wire.Input) string {
	if len(in.Spec) <= maxInlineSpec {
		return ""
	}
	return fmt.Sprintf("the resolved spec is %s, more than a Temporal workflow input may carry (2 MB): `starter run` "+
		"passes it by reference through the results store (with --address, name the workers' store with --store or %s); "+
		"`temporal workflow start --input-file` cannot start it", bytesSize(int64(len(in.Spec))), store.EnvDSN)
}

// byReference saves canonical (the run's canonical spec JSON) in st under run id, as PrepareRun would save it
// from an inline input, and returns the input that refers to it: the run id, the output and the saved spec's
// digest. The history then holds a few hundred bytes whatever the spec's size. specs, when not nil, is the cache
// of this process's worker, which then uses spec (the decoding of canonical) instead of decoding the saved bytes.
func byReference(ctx context.Context, st store.Store, specs *activities.SpecCache, id string, spec *experiment.Spec,
	canonical []byte, output string) (wire.Input, error) {
	digest, err := activities.SaveCanonical(ctx, st, id, canonical)
	if errors.Is(err, store.ErrSpecConflict) {
		return wire.Input{}, fmt.Errorf("run %s: %w; start a fresh run with --new", id, err)
	}
	if err != nil {
		return wire.Input{}, err
	}
	if specs != nil {
		specs.Put(id, spec)
	}
	return wire.Input{RunID: id, Output: output, SpecDigest: digest}, nil
}

// startInput is the workflow input that starts run id of spec (canonical is its JSON), writing to output: by
// reference when the session can reach the results store the workers use (always in embedded mode; with
// --address when --store or SILICO_STORE names it), else inline, which a spec too large for a workflow input
// cannot be.
func startInput(ctx context.Context, sess *session, id string, spec *experiment.Spec, canonical []byte, output string) (wire.Input, error) {
	if sess.store == nil && sess.flags.storeNamed() {
		if err := sess.openStore(ctx); err != nil {
			return wire.Input{}, err
		}
	}
	if sess.store != nil {
		return byReference(ctx, sess.store, sess.specs, id, spec, canonical, output)
	}
	in := wire.Input{Spec: canonical, Output: output}
	if note := tooLargeNote(in); note != "" {
		return in, withCode(exitUsage, errors.New(note))
	}
	return in, nil
}
