package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/suggest"
)

// overrides are the run flags that change a spec before it runs, as the seed-000 framework's CLI offers them.
// A changed spec is a different run (its id derives from the spec).
type overrides struct {
	models     []string
	seeds      []int64
	onError    string
	cumulative bool
	maxConc    int
}

func (o *overrides) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&o.models, "model", nil, "run only these model ids (repeat or comma-separate)")
	fl.Var(&seedsValue{seeds: &o.seeds}, "seeds", "replace the spec's seeds: whole numbers, comma-separated (e.g. 1,2,3)")
	fl.StringVar(&o.onError, "on-error", "", "override run.on_error: warn, ignore or raise")
	fl.BoolVar(&o.cumulative, "cumulative", false, "override run.cumulative: each persona remembers its earlier answers")
	fl.IntVar(&o.maxConc, "max-concurrency", 0, "override run.max_concurrency of the spec")
}

// apply changes spec and validates the result; every mistake is a usage error.
func (o *overrides) apply(spec *experiment.Spec) error {
	if len(o.models) > 0 {
		var kept []experiment.Model
		for _, id := range o.models {
			i := slices.IndexFunc(spec.Models, func(m experiment.Model) bool { return m.ID == id })
			if i < 0 {
				ids := idsOf(spec.Models, func(m experiment.Model) string { return m.ID })
				return withCode(exitUsage, fmt.Errorf("--model %s: the spec has no such model%s; it has %s", id,
					suggest.DidYouMean(id, ids), shortList(ids, 12)))
			}
			kept = append(kept, spec.Models[i])
		}
		spec.Models = kept
	}
	if len(o.seeds) > 0 {
		spec.Seeds = o.seeds
	}
	if o.onError != "" {
		spec.Run.OnError = o.onError
	}
	if o.cumulative {
		spec.Run.Cumulative = true
	}
	if o.maxConc > 0 {
		spec.Run.MaxConcurrency = o.maxConc
	}
	if err := spec.Validate(); err != nil {
		return withCode(exitUsage, fmt.Errorf("the spec with these flags is invalid:\n%w", err))
	}
	return nil
}

func newPromptCmd() *cobra.Command {
	var item, persona, model, cellID string
	var seed int64
	cmd := &cobra.Command{
		Use:   "prompt SPEC (--item ID --persona ID | --cell CELL_ID)",
		Short: "Print the messages one cell sends",
		Long: "Print the messages one cell sends, with the seed and parameters of its call. --item and --persona pick " +
			"the cell of the item's own wording, as written, of the first prompt and the main call; --cell takes any " +
			"cell id of results.csv (a wording variant, a reversed order, a prompt variant, a verbalized probe).",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := loadSpec(cmd.ErrOrStderr(), args[0])
			if err != nil {
				return withCode(exitUsage, err)
			}
			c := experiment.Cell{}
			if spec.IsEmbed() {
				return withCode(exitUsage, fmt.Errorf("%s is a kind: embed spec: its cells send texts to embed, not "+
					"messages; `starter validate %[1]s` counts them", args[0]))
			}
			if cellID != "" {
				if item != "" || persona != "" || model != "" || cmd.Flags().Changed("seed") {
					return withCode(exitUsage, errors.New("--cell names the whole cell: give it without --item, --persona, --model and --seed"))
				}
				if c, err = cellByID(spec, cellID); err != nil {
					return withCode(exitUsage, err)
				}
				return printPrompt(cmd.OutOrStdout(), spec, c)
			}
			if item == "" || persona == "" {
				return withCode(exitUsage, errors.New("want --item and --persona (or --cell with a cell id of results.csv)"))
			}
			itemIDs := idsOf(spec.Questionnaire.Items, func(it experiment.Item) string { return it.ID })
			if c.Item = slices.Index(itemIDs, item); c.Item < 0 {
				return withCode(exitUsage, unknownID("item", item, itemIDs))
			}
			personaIDs := idsOf(spec.Personas, func(p experiment.Persona) string { return p.ID })
			if c.Persona = slices.Index(personaIDs, persona); c.Persona < 0 {
				return withCode(exitUsage, unknownID("persona", persona, personaIDs))
			}
			if model != "" {
				modelIDs := idsOf(spec.Models, func(m experiment.Model) string { return m.ID })
				if c.Model = slices.Index(modelIDs, model); c.Model < 0 {
					return withCode(exitUsage, unknownID("model", model, modelIDs))
				}
			}
			if cmd.Flags().Changed("seed") {
				if c.Seed = slices.Index(spec.Seeds, seed); c.Seed < 0 {
					seeds := idsOf(spec.Seeds, func(s int64) string { return strconv.FormatInt(s, 10) })
					return withCode(exitUsage, fmt.Errorf("--seed %d: not among the spec's seeds; they are %s", seed, shortList(seeds, 12)))
				}
			}
			return printPrompt(cmd.OutOrStdout(), spec, c)
		},
	}
	cmd.Flags().StringVar(&item, "item", "", "item id")
	cmd.Flags().StringVar(&persona, "persona", "", "persona id")
	cmd.Flags().StringVar(&model, "model", "", "model id (default: the first)")
	cmd.Flags().Int64Var(&seed, "seed", 0, "seed (default: the first)")
	cmd.Flags().StringVar(&cellID, "cell", "", "a cell id of results.csv, e.g. m/1/E1:neg/p5/rev (instead of --item and --persona)")
	return cmd
}

// cellByID finds the cell whose id is id, by its model and seed first (the id's first two parts) so that only
// one (model, seed)'s cells are named to compare.
func cellByID(spec *experiment.Spec, id string) (experiment.Cell, error) {
	parts := strings.SplitN(id, "/", 3)
	modelIDs := idsOf(spec.Models, func(m experiment.Model) string { return m.ID })
	if len(parts) < 3 {
		return experiment.Cell{}, fmt.Errorf("--cell %s: a cell id is model/seed/item/persona[/prompt variant][/verbalized][/rev], e.g. %s", id, spec.CellID(experiment.Cell{}))
	}
	m := slices.Index(modelIDs, parts[0])
	if m < 0 {
		return experiment.Cell{}, unknownID("model", parts[0], modelIDs)
	}
	seeds := idsOf(spec.Seeds, func(s int64) string { return strconv.FormatInt(s, 10) })
	sd := slices.Index(seeds, parts[1])
	if sd < 0 {
		return experiment.Cell{}, fmt.Errorf("--cell %s: seed %s is not among the spec's seeds; they are %s", id, parts[1], shortList(seeds, 12))
	}
	first := spec.CellIndexOf(experiment.Cell{Model: m, Seed: sd})
	var near []string
	for i := first; i < first+spec.SeedCells(); i++ {
		c := spec.Cell(i)
		got := spec.CellID(c)
		if got == id {
			return c, nil
		}
		near = append(near, got)
	}
	return experiment.Cell{}, fmt.Errorf("--cell %s: no such cell%s; the cells of model %s, seed %s: %s", id,
		suggest.DidYouMean(id, near), parts[0], parts[1], shortList(near, 8))
}

// printPrompt prints cell c's call: its id, seed, parameters and messages.
func printPrompt(out io.Writer, spec *experiment.Spec, c experiment.Cell) error {
	msgs, err := spec.Render(c, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# cell %s\n", spec.CellID(c))
	// The seed the call sends: the cell's own under run.seed_per_cell, else the spec's seed value.
	fmt.Fprintf(out, "# seed %d\n", spec.CallSeed(c))
	// The parameters the call sends with its answer mode's (logprobs, response_format), as JSON: what
	// the response cache keys it by, besides the messages.
	if params, err := json.Marshal(spec.CallParams(c)); err == nil && string(params) != "{}" {
		fmt.Fprintf(out, "# params %s\n", params)
	}
	for _, m := range msgs {
		fmt.Fprintf(out, "\n[%s]\n%s\n", m.Role, m.Content)
		for _, ref := range m.Images {
			if len(ref) > 60 && strings.HasPrefix(ref, "data:") {
				ref = fmt.Sprintf("%s… (%d bytes of base64, a file the spec names)", ref[:40], len(ref))
			}
			fmt.Fprintf(out, "[image] %s\n", ref)
		}
	}
	return nil
}
