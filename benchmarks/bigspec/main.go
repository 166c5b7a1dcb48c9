// Command bigspec writes a large chat spec to stdout, for the memory measurements of docs/performance.md §9: a
// grid of items × personas × seeds on the in-process simulator at zero latency, with five Likert options and
// five scales, the items inline in the YAML. --item-chars pads every item's text to about that many characters,
// for a spec whose size is its item bank.
//
//	go run ./benchmarks/bigspec --items 100 --personas 100 --seeds 1000 > /tmp/cells-10m.yaml
//	go run ./benchmarks/bigspec --items 100000 --personas 1 --seeds 1 --item-chars 500 > /tmp/items-100k.yaml
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
)

func main() {
	items := flag.Int("items", 100, "questionnaire items")
	personas := flag.Int("personas", 100, "personas")
	seeds := flag.Int("seeds", 10, "seeds")
	itemChars := flag.Int("item-chars", 0, "pad each item's text to about this many characters (0: a short statement)")
	name := flag.String("name", "", "spec name (default: derived from the grid)")
	flag.Parse()
	if *items < 1 || *personas < 1 || *seeds < 1 {
		log.Fatal("bigspec: --items, --personas and --seeds must be at least 1")
	}
	n := *name
	if n == "" {
		n = fmt.Sprintf("bigspec %d items x %d personas x %d seeds", *items, *personas, *seeds)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("name: %s\n", strconv.Quote(n))
	p("seeds: [")
	for s := range *seeds {
		if s > 0 {
			p(", ")
		}
		p("%d", s+1)
	}
	p("]\n")
	p(`models:
  - {id: sim, name: sim-model, provider: sim, params: {temperature: 0.7, max_tokens: 16}, price: {input_per_mtok: 0.15, output_per_mtok: 0.60}}
simulator: {latency: 0s}
prompt:
  type: chat
  messages:
    - {role: system, content: "Answer as this person: {persona_description}"}
    - {role: user, content: "{general_instruction}\n\nStatement: \"{question}\"\n\n{answer_options}\n\nAnswer with the number and text of exactly one option."}
personas:
`)
	for i := range *personas {
		p("  - {id: p%d, attributes: {age: %d}, template: \"A person of {age} years.\"}\n", i, 18+i%60)
	}
	p(`questionnaire:
  name: generated
  instruction: Describe yourself as you generally are now.
  options:
    - {id: "1", text: "1. Very Inaccurate", weight: 1}
    - {id: "2", text: "2. Moderately Inaccurate", weight: 2}
    - {id: "3", text: "3. Neither Accurate Nor Inaccurate", weight: 3}
    - {id: "4", text: "4. Moderately Accurate", weight: 4}
    - {id: "5", text: "5. Very Accurate", weight: 5}
  scales:
    - {id: E, name: Extraversion}
    - {id: A, name: Agreeableness}
    - {id: C, name: Conscientiousness}
    - {id: ES, name: Emotional Stability}
    - {id: I, name: Intellect}
  items:
`)
	scales := []string{"E", "A", "C", "ES", "I"}
	filler := strings.Repeat("and I say so plainly ", 1+*itemChars/21)
	for i := range *items {
		text := fmt.Sprintf("I am item %d of this questionnaire", i)
		if pad := *itemChars - len(text); pad > 0 {
			text += ", " + filler[:pad]
		}
		keyed := ""
		if i%4 == 3 {
			keyed = ", reversed: true"
		}
		p("    - {id: q%d, text: %s, scale: %s%s}\n", i, strconv.Quote(text), scales[i%len(scales)], keyed)
	}
	p("run: {max_concurrency: 16, max_parallel_passes: 2, on_error: warn}\n")
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
}
