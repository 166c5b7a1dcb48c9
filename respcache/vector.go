package respcache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/silicolab/silico/store"
)

// vectorVersion is the format of embedding entries. It is apart from version, the chat answers' format, and its
// key material names its kind, so a vector key can never equal an answer key.
const vectorVersion = 1

// vectorKeyMaterial is what an embedding's key digests.
type vectorKeyMaterial struct {
	Kind       string `json:"kind"`
	Version    int    `json:"v"`
	Endpoint   string `json:"endpoint"`
	Model      string `json:"model"`
	Text       string `json:"text"`
	Dimensions int    `json:"dimensions"`
}

// VectorKey is the cache key of the embedding of text by model at endpoint (see Endpoint), with the dimensions
// asked for (0: the model's own). The request a text was packed into is not part of it: a vector does not
// depend on its neighbours in the batch.
func VectorKey(endpoint, model, text string, dimensions int) store.CacheKey {
	b, err := json.Marshal(vectorKeyMaterial{Kind: "embedding", Version: vectorVersion, Endpoint: endpoint,
		Model: model, Text: text, Dimensions: dimensions})
	if err != nil {
		panic(fmt.Sprintf("cache: vector key: %v", err)) // strings and numbers always marshal
	}
	return sha256.Sum256(b)
}

// Vector is what an embedding entry keeps: the vector and the tokens the provider counted for its text (a
// share of its request's, see activities).
type Vector struct {
	Values       []float32
	PromptTokens int
}

// An embedding entry's value is binary:
//
//	'V' | version (1 byte) | key (32 bytes) | prompt tokens (uvarint) | dims (uvarint) | dims little-endian float32s
//
// and its checksum is the SHA-256 of the value.
const vectorMagic = 'V'

const vectorHeader = 2 + len(store.CacheKey{})

// VectorEntry is the cache entry of vector v of the text with key, from model, written by run at now.
func VectorEntry(key store.CacheKey, model, run string, v Vector, now time.Time) store.CacheEntry {
	b := make([]byte, 0, vectorHeader+2*binary.MaxVarintLen64+4*len(v.Values))
	b = append(b, vectorMagic, vectorVersion)
	b = append(b, key[:]...)
	b = binary.AppendUvarint(b, uint64(max(0, v.PromptTokens)))
	b = binary.AppendUvarint(b, uint64(len(v.Values)))
	for _, f := range v.Values {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return store.CacheEntry{Key: key, Model: model, Value: b, Sum: sha256.Sum256(b), Run: run, Created: now.UTC()}
}

// ReadVector validates e as the embedding entry of key and returns its vector. dims is the length the model's
// vectors have in this run (0: not known yet). An entry whose bytes do not match its checksum, that does not
// decode, names another key or version, has another length than dims, or holds a value that is not finite, is
// ErrInvalid.
func ReadVector(e store.CacheEntry, key store.CacheKey, dims int) (Vector, error) {
	if err := checkEntry(e, key); err != nil {
		return Vector{}, err
	}
	b, err := body(e.Value, key, []byte{vectorMagic, vectorVersion}, fmt.Sprintf("a version %d embedding entry", vectorVersion))
	if err != nil {
		return Vector{}, err
	}
	prompt, b, err := count(b, key, "prompt token count")
	if err != nil {
		return Vector{}, err
	}
	d, b, err := count(b, key, "dimensions")
	if err != nil || d == 0 || uint64(len(b)) != 4*d {
		return Vector{}, fmt.Errorf("%w %s: bad dimensions", ErrInvalid, key)
	}
	if dims > 0 && int(d) != dims {
		return Vector{}, fmt.Errorf("%w %s: %d dimensions, the model's vectors have %d", ErrInvalid, key, d, dims)
	}
	v := make([]float32, d)
	for i := range v {
		f := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return Vector{}, fmt.Errorf("%w %s: component %d is not finite", ErrInvalid, key, i)
		}
		v[i] = f
	}
	return Vector{Values: v, PromptTokens: int(prompt)}, nil
}
