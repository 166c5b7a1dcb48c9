package specfile

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// largeSpec is a spec of n items of about 500 characters each, inline, as benchmarks/bigspec writes one.
func largeSpec(n int) []byte {
	var b strings.Builder
	b.WriteString(`name: large
models: [{id: sim, name: sim-model, provider: sim}]
personas: [{id: p, template: "A person."}]
questionnaire:
  name: generated
  options:
    - {id: "1", text: "1. No", weight: 1}
    - {id: "2", text: "2. Yes", weight: 2}
  scales: [{id: E, name: Extraversion}]
  items:
`)
	filler := strings.Repeat("and I say so plainly ", 25)[:470]
	for i := range n {
		fmt.Fprintf(&b, "    - {id: q%d, text: \"I am item %d, %s\", scale: E}\n", i, i, filler)
	}
	return []byte(b.String())
}

// BenchmarkParseLargeSpec parses a spec of 100,000 items (52 MB) and reports the live heap right after, with the
// spec still held, beside the allocations: what parsing keeps is the spec, what it allocated is garbage.
//
//	go test -run '^$' -bench ParseLargeSpec -benchtime 1x -memprofile mem.pprof ./specfile/
func BenchmarkParseLargeSpec(b *testing.B) {
	data := largeSpec(100_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := Parse(data, "large.yaml", ".")
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc)/1e6, "MB-live-after")
		runtime.KeepAlive(s)
	}
}
