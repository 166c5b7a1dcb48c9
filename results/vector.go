package results

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
)

// EncodeVector is how a record of an embed spec keeps its vector in Raw: little-endian float32s in base64, as
// providers send them with encoding_format base64. Exact, and a quarter of the size of decimal text.
func EncodeVector(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeVector reads a vector written by EncodeVector.
func DecodeVector(s string) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		return nil, fmt.Errorf("not a base64 float32 vector (%d bytes): %v", len(b), err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
