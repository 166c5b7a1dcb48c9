package batchformat

import (
	"fmt"

	"github.com/silicolab/silico/wire"
)

// Item is the size of one encoded request (Line's length) and, for embeddings, its number of inputs.
type Item struct {
	Bytes  int
	Inputs int
}

// Chunk is one batch's share of the requests: items[Start:End], Bytes the size of their encoded input (envelope
// included) and Inputs their embedding inputs.
type Chunk struct {
	Start, End int
	Bytes      int64
	Inputs     int
}

// Split cuts items, in order, into the fewest consecutive chunks that each fit lim as batches of format f: at
// most MaxRequests items, MaxBytes bytes once the format's envelope is added, and MaxInputs inputs when that is
// set. A chunk is filled before the next is started, so the cut is a function of the items alone and every
// attempt of a pass cuts its requests the same way. The items should be one model's (a batch serves one model).
// An item that cannot fit any batch alone is an error naming its index.
func Split(f wire.BatchFormat, items []Item, lim Limits) ([]Chunk, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if lim.MaxRequests <= 0 || lim.MaxBytes <= 0 || lim.MaxInputs < 0 {
		return nil, fmt.Errorf("batch: limits %+v: want max_requests and max_bytes > 0", lim)
	}
	open, sep, end := Envelope(f)
	frame := int64(len(open) + len(end))
	var out []Chunk
	cur := Chunk{Bytes: frame}
	for i, it := range items {
		if it.Bytes <= 0 || it.Inputs < 0 {
			return nil, fmt.Errorf("batch: request %d: size %d bytes, %d inputs", i, it.Bytes, it.Inputs)
		}
		if frame+int64(it.Bytes) > lim.MaxBytes {
			return nil, fmt.Errorf("batch: request %d is %d bytes: larger than a batch's %d", i, it.Bytes, lim.MaxBytes)
		}
		if lim.MaxInputs > 0 && it.Inputs > lim.MaxInputs {
			return nil, fmt.Errorf("batch: request %d has %d inputs: more than a batch's %d", i, it.Inputs, lim.MaxInputs)
		}
		add := int64(it.Bytes)
		if cur.End > cur.Start {
			add += int64(len(sep))
		}
		full := cur.End-cur.Start == lim.MaxRequests || cur.Bytes+add > lim.MaxBytes ||
			(lim.MaxInputs > 0 && cur.Inputs+it.Inputs > lim.MaxInputs)
		if full {
			out = append(out, cur)
			cur = Chunk{Start: i, End: i, Bytes: frame}
			add = int64(it.Bytes)
		}
		cur.End = i + 1
		cur.Bytes += add
		cur.Inputs += it.Inputs
	}
	if cur.End > cur.Start {
		out = append(out, cur)
	}
	return out, nil
}
