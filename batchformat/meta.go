package batchformat

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Key names one batch of a run: the run, the pass, the chunk of the pass, the round (0 for the first
// submission, then one more for each resubmission of what never ran) and the try (0, then one more for each
// resubmission of a round whose batch the provider failed as a whole, which does not count as a round). A run
// creates at most one batch per key, which is what lets a retried activity find the batch an earlier attempt
// created instead of paying for a second, and what keeps a resubmission from adopting the batch that failed.
type Key struct {
	Run   string
	Pass  string
	Chunk int
	Round int
	Try   int
}

// Metadata keys of a batch silico created. OpenAI keeps at most 16 pairs, keys up to 64 and values up to 512
// characters.
const (
	MetaRun    = "silico_run"
	MetaPass   = "silico_pass"
	MetaChunk  = "silico_chunk"
	MetaRound  = "silico_round"
	MetaDigest = "silico_digest"
	// MetaTry is set only when Key.Try is not 0, so the batches of the first try carry the metadata they carried
	// before tries existed; a batch without it is of try 0.
	MetaTry = "silico_try"
)

// maxMetaValue is the longest metadata value OpenAI accepts.
const maxMetaValue = 512

// metaValue keeps s when it fits a metadata value, else stands for it by its digest.
func metaValue(s string) string {
	if len(s) <= maxMetaValue {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Digest is the SHA-256 of a batch's input, in hex: what identifies its content.
func Digest(input []byte) string {
	sum := sha256.Sum256(input)
	return hex.EncodeToString(sum[:])
}

// Metadata is the metadata of the batch of k whose input has the given digest (see Digest).
func (k Key) Metadata(digest string) map[string]string {
	md := map[string]string{
		MetaRun:    metaValue(k.Run),
		MetaPass:   metaValue(k.Pass),
		MetaChunk:  strconv.Itoa(k.Chunk),
		MetaRound:  strconv.Itoa(k.Round),
		MetaDigest: digest,
	}
	if k.Try != 0 {
		md[MetaTry] = strconv.Itoa(k.Try)
	}
	return md
}

// Matches reports whether a batch's metadata names k and an input of the given digest: the batch an earlier
// attempt created for k, with the same requests. A batch of k with another digest is not it (and means the
// requests of a chunk changed between attempts, which the caller treats as an error).
func (k Key) Matches(md map[string]string, digest string) bool {
	return k.Names(md) && md[MetaDigest] == digest
}

// Names reports whether a batch's metadata names k, whatever its input.
func (k Key) Names(md map[string]string) bool {
	try := "0"
	if t, ok := md[MetaTry]; ok {
		try = t
	}
	return md[MetaRun] == metaValue(k.Run) && md[MetaPass] == metaValue(k.Pass) &&
		md[MetaChunk] == strconv.Itoa(k.Chunk) && md[MetaRound] == strconv.Itoa(k.Round) && try == strconv.Itoa(k.Try)
}
