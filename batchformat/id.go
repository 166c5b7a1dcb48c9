package batchformat

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/silicolab/silico/wire"
)

// maxAnthropicID is the longest custom_id Anthropic accepts.
const maxAnthropicID = 64

func validAnthropicID(s string) bool {
	if len(s) == 0 || len(s) > maxAnthropicID {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !safeByte(s[i]) {
			return false
		}
	}
	return true
}

func safeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// SafeID maps a cell's stable id to a custom_id Anthropic accepts (1-64 characters of [A-Za-z0-9_-]),
// deterministically: an id that is already valid is kept; any other becomes its first 47 bytes with every other
// character replaced by '_', a '-', and the first 16 hex digits of its SHA-256. So "sim/1/3/nurse" is
// "sim_1_3_nurse-" and a digest, readable in the provider's console and the same on every attempt.
func SafeID(id string) string {
	if validAnthropicID(id) {
		return id
	}
	const keep = maxAnthropicID - 1 - 16
	b := []byte(id)
	if len(b) > keep {
		b = b[:keep]
	}
	for i, c := range b {
		if !safeByte(c) {
			b[i] = '_'
		}
	}
	sum := sha256.Sum256([]byte(id))
	return string(b) + "-" + hex.EncodeToString(sum[:8])
}

// CustomIDs returns the custom_id of each cell id for a batch of format f, in order: the cell id itself for
// FormatOpenAI (any string is accepted), SafeID for FormatAnthropic. Two cells with one custom_id (a repeated cell
// id, or, for Anthropic, two ids whose mapped forms meet) are an error: results are matched by custom_id alone.
func CustomIDs(f wire.BatchFormat, cells []string) ([]string, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	out := make([]string, len(cells))
	seen := make(map[string]int, len(cells))
	for i, c := range cells {
		if c == "" {
			return nil, fmt.Errorf("batch: cell %d has an empty id", i)
		}
		id := c
		if f == wire.FormatAnthropic {
			id = SafeID(c)
		}
		if j, dup := seen[id]; dup {
			return nil, fmt.Errorf("batch: cells %q and %q have the same custom_id %q", cells[j], c, id)
		}
		seen[id] = i
		out[i] = id
	}
	return out, nil
}
