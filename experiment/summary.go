package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// Hash is a short stable id of the spec: the first 12 hex digits of the SHA-256 of its canonical JSON with
// defaults applied (so a spec that spells out a default hashes like one that leaves it out). Workflow ids derive
// from it: the same spec attaches to the same run.
func (s *Spec) Hash() string {
	_, b, err := s.Canonical()
	if err != nil {
		panic(err.Error()) // a Spec holds only JSON-safe values
	}
	return HashOf(b)
}

// HashOf is the Hash of the spec whose canonical JSON (see Canonical) is b.
func HashOf(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])[:12]
}

// Canonical returns a copy of s through JSON with its defaults applied, and the copy's JSON: the spec's canonical
// form, which Hash digests and a workflow input carries. s is not changed. The copy is not validated (Validate
// compiles its templates). s is not used after its first encoding, so a caller that goes on with the copy and
// drops s holds a large spec once, plus its JSON, not twice.
func (s *Spec) Canonical() (*Spec, []byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, nil, fmt.Errorf("experiment: encode spec: %w", err)
	}
	c := &Spec{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, nil, fmt.Errorf("experiment: decode spec: %w", err)
	}
	c.ApplyDefaults()
	if b, err = json.Marshal(c); err != nil {
		return nil, nil, fmt.Errorf("experiment: encode spec: %w", err)
	}
	return c, b, nil
}

// Summary describes the grid in one line, its name and its Grid: "IPIP-50 · 2 models × 3 seeds × 50 items × 20
// personas = 6,000 calls", "bfi · 1 model × 2 seeds × 25 items × 12 personas × 2 option orders = 1,200 calls".
func (s *Spec) Summary() string {
	if s.IsEmbed() {
		return s.Name + " · embed " + s.Grid().String()
	}
	return s.Name + " · " + s.Grid().String()
}

// embedNoun names one text of each source in Summary.
var embedNoun = map[string]string{EmbedItems: "item", EmbedPersonas: "persona", EmbedPrompts: "prompt", EmbedCSV: "text"}

func count(n int, noun string) string {
	if n != 1 {
		noun += "s"
	}
	return thousands(n) + " " + noun
}

// thousands writes n with comma separators: 6000 → "6,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
