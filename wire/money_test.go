package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/silicolab/silico/usage"
)

// The money fields as the release before usage.USD declared them, float64 dollars under the same keys: what an
// earlier worker writes and reads.
type (
	oldPlan struct {
		BudgetUSD float64
	}
	oldBatchPlan struct {
		Costs []float64 `json:"costs,omitempty"`
	}
	oldCollected struct {
		AgainCost float64 `json:"again_cost,omitempty"`
	}
	oldPassInput struct {
		Budgeted  bool
		BudgetUSD float64
	}
)

// TestOldMoneyPayloadsDecode: payloads written by the release that carried money as float64 dollars decode into
// the USD fields, each amount the nearest picodollar (halves away from zero); every amount that release wrote as
// a whole number of picodollars (a cost) or as a decimal of at most 12 decimals (budget_usd) reads back exactly,
// so its Float is the float64 the old workflow compared. And a payload of this release reads in a worker of the
// earlier one as the nearest float64.
func TestOldMoneyPayloadsDecode(t *testing.T) {
	var plan Plan
	decode(t, `{"Name":"x","Cells":4,"Run":{},"BudgetUSD":12.5}`, &plan)
	if plan.BudgetUSD != usage.Dollars(12.5) {
		t.Errorf("Plan.BudgetUSD 12.5 read as $%v", plan.BudgetUSD)
	}
	var bp BatchPlan
	decode(t, `{"chunks":[[[0,12]],[[12,24]]],"cached":0,"costs":[0.000123456789,1.5e-07],"usage":{"prompt_tokens":0,"completion_tokens":0,"cost_usd":0,"saved_usd":0},"format":"openai"}`, &bp)
	if len(bp.Costs) != 2 || bp.Costs[0] != usage.Picodollars(123_456_789) || bp.Costs[1] != usage.Picodollars(150_000) {
		t.Errorf("BatchPlan.Costs [0.000123456789, 1.5e-07] read as %v", bp.Costs)
	}
	var got BatchCollected
	decode(t, `{"recorded":3,"failed":0,"again":[[3,5]],"again_cost":2.5e-05,"again_digest":"d","usage":{"prompt_tokens":1,"completion_tokens":2,"cost_usd":1e-06,"saved_usd":0}}`, &got)
	if got.AgainCost != usage.Picodollars(25_000_000) || got.Usage.CostUSD != usage.Picodollars(1_000_000) {
		t.Errorf("BatchCollected again_cost 2.5e-05, cost_usd 1e-06 read as $%v, $%v", got.AgainCost, got.Usage.CostUSD)
	}
	// A share the old workflow divided in float64 is no whole number of picodollars: the nearest one.
	var in PassInput
	decode(t, `{"RunID":"r","Pass":{"index":0,"model":0,"seed":0,"start":0,"end":16},"Limits":{"Concurrency":8,"RPM":0,"TPM":0,"Burst":0},"Budgeted":true,"BudgetUSD":3.3333333333333335}`, &in)
	if !in.Budgeted || in.BudgetUSD != usage.Picodollars(3_333_333_333_333) {
		t.Errorf("PassInput.BudgetUSD 3.3333333333333335 read as $%v", in.BudgetUSD)
	}
	var sh Share
	decode(t, `{"Limits":{"Concurrency":1,"RPM":0,"TPM":0,"Burst":0},"Budgeted":true,"BudgetUSD":0.0000000000025}`, &sh)
	if sh.BudgetUSD != usage.Picodollars(3) {
		t.Errorf("Share.BudgetUSD 2.5 picodollars read as %d, want 3 (halves away from zero)", sh.BudgetUSD.Picodollars())
	}

	// Every whole number of picodollars below $4,096, written as the old release wrote a cost, reads back
	// exactly: the same picodollars, and the same float64.
	r := rand.New(rand.NewPCG(38, 5))
	for i := range 100_000 {
		n := r.Int64N(4096 * 1_000_000_000_000)
		if i%2 == 0 {
			n = r.Int64N(1_000_000_000) // costs of a few calls: the common case
		}
		want := usage.Picodollars(n)
		b, err := json.Marshal(oldBatchPlan{Costs: []float64{want.Float()}})
		if err != nil {
			t.Fatal(err)
		}
		var p BatchPlan
		if err := json.Unmarshal(b, &p); err != nil || len(p.Costs) != 1 || p.Costs[0] != want || p.Costs[0].Float() != want.Float() {
			t.Fatalf("%s read as %v, %v; want %d picodollars", b, p.Costs, err, n)
		}
	}

	// This release's payloads in a worker of the earlier one.
	b, err := json.Marshal(PassInput{Budgeted: true, BudgetUSD: usage.Picodollars(3_333_333_333_333)})
	if err != nil {
		t.Fatal(err)
	}
	var old oldPassInput
	if err := json.Unmarshal(b, &old); err != nil || old.BudgetUSD != 3.333333333333 {
		t.Errorf("%s read by the earlier release as %v, %v", b, old.BudgetUSD, err)
	}
	b, err = json.Marshal(BatchCollected{AgainCost: usage.Picodollars(150_000)})
	if err != nil {
		t.Fatal(err)
	}
	var oldGot oldCollected
	if err := json.Unmarshal(b, &oldGot); err != nil || oldGot.AgainCost != 1.5e-07 {
		t.Errorf("%s read by the earlier release as %v, %v", b, oldGot.AgainCost, err)
	}
	b, err = json.Marshal(Plan{BudgetUSD: usage.Dollars(0.1)})
	if err != nil {
		t.Fatal(err)
	}
	var oldP oldPlan
	if err := json.Unmarshal(b, &oldP); err != nil || oldP.BudgetUSD != 0.1 {
		t.Errorf("%s read by the earlier release as %v, %v", b, oldP.BudgetUSD, err)
	}
}

// TestRecordedMoneyReadsExactly: in the recorded histories, every cost of a batch plan or a collect (recorded as
// float64 dollars) reads as a USD whose Float is that very float64, and every budget share within half a
// picodollar of it: what the old path of ChangeBatchBudgetUSD needs to replay their decisions.
func TestRecordedMoneyReadsExactly(t *testing.T) {
	files, err := filepath.Glob("../workflows/testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	costs, shares := 0, 0
	for _, f := range files {
		for _, e := range readHistory(t, f).Events {
			var ps payloads
			switch {
			case e.Scheduled != nil && e.Scheduled.ActivityType.Name == RunSeedPass.Name:
				ps = e.Scheduled.Input
			case e.ActivityCompleted != nil:
				ps = e.ActivityCompleted.Result
			default:
				continue
			}
			for _, d := range ps.data(t) {
				var oldPlan oldBatchPlan
				var oldGot oldCollected
				var oldIn oldPassInput
				var plan BatchPlan
				var got BatchCollected
				var in PassInput
				if bytes.Contains(d, []byte(`"costs"`)) {
					decode(t, string(d), &oldPlan)
					decode(t, string(d), &plan)
					for i, c := range oldPlan.Costs {
						costs++
						if plan.Costs[i].Float() != c {
							t.Errorf("%s: cost %v read as $%v", filepath.Base(f), c, plan.Costs[i])
						}
					}
				}
				if bytes.Contains(d, []byte(`"again_cost"`)) {
					decode(t, string(d), &oldGot)
					decode(t, string(d), &got)
					costs++
					if got.AgainCost.Float() != oldGot.AgainCost {
						t.Errorf("%s: again_cost %v read as $%v", filepath.Base(f), oldGot.AgainCost, got.AgainCost)
					}
				}
				if bytes.Contains(d, []byte(`"Budgeted":true`)) {
					decode(t, string(d), &oldIn)
					decode(t, string(d), &in)
					shares++
					if diff := math.Abs(float64(in.BudgetUSD.Picodollars()) - oldIn.BudgetUSD*1e12); diff > 0.5 {
						t.Errorf("%s: share %v read as $%v", filepath.Base(f), oldIn.BudgetUSD, in.BudgetUSD)
					}
				}
			}
		}
	}
	if costs == 0 || shares == 0 {
		t.Errorf("%d costs and %d budget shares in the recorded histories; want some of each", costs, shares)
	}
}

// decode reads the JSON s into v.
func decode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%T: %v\n%s", v, err, s)
	}
}
