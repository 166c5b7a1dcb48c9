package llm

import (
	"math"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/usage"
)

func TestPriceFor(t *testing.T) {
	override := &experiment.Price{InputPerMTok: 1, OutputPerMTok: 2}
	tests := []struct {
		name   string
		m      experiment.Model
		want   experiment.Price
		wantOK bool
	}{
		{name: "exact", m: experiment.Model{Name: "gpt-4o-mini"}, want: experiment.Price{InputPerMTok: 0.15, OutputPerMTok: 0.60}, wantOK: true},
		{name: "dated snapshot of mini is mini", m: experiment.Model{Name: "gpt-4o-mini-2024-07-18"}, want: experiment.Price{InputPerMTok: 0.15, OutputPerMTok: 0.60}, wantOK: true},
		{name: "dated snapshot", m: experiment.Model{Name: "gpt-4o-2024-08-06"}, want: experiment.Price{InputPerMTok: 2.50, OutputPerMTok: 10}, wantOK: true},
		{name: "snapshot priced apart", m: experiment.Model{Name: "gpt-4o-2024-05-13"}, want: experiment.Price{InputPerMTok: 5, OutputPerMTok: 15}, wantOK: true},
		{name: "short snapshot", m: experiment.Model{Name: "gpt-3.5-turbo-0125"}, want: experiment.Price{InputPerMTok: 0.50, OutputPerMTok: 1.50}, wantOK: true},
		{name: "4.1 nano", m: experiment.Model{Name: "gpt-4.1-nano-2025-04-14"}, want: experiment.Price{InputPerMTok: 0.10, OutputPerMTok: 0.40}, wantOK: true},
		{name: "o3-mini", m: experiment.Model{Name: "o3-mini"}, want: experiment.Price{InputPerMTok: 1.10, OutputPerMTok: 4.40}, wantOK: true},
		{name: "embedding", m: experiment.Model{Name: "text-embedding-3-small"}, want: experiment.Price{InputPerMTok: 0.02}, wantOK: true},
		{name: "override wins", m: experiment.Model{Name: "gpt-4o", Price: override}, want: *override, wantOK: true},
		{name: "override of unknown model", m: experiment.Model{Name: "qwen2.5", Price: override}, want: *override, wantOK: true},
		{name: "unknown", m: experiment.Model{Name: "qwen2.5"}},
		{name: "variant is not a snapshot", m: experiment.Model{Name: "gpt-4o-audio-preview"}},
		{name: "prefix without dash", m: experiment.Model{Name: "gpt-4o2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := PriceFor(tt.m)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("PriceFor(%q) = %+v, %v; want %+v, %v", tt.m.Name, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestCost(t *testing.T) {
	p := experiment.Price{InputPerMTok: 2.50, OutputPerMTok: 10}
	if got, want := Cost(p, 1_000_000, 500_000), usage.Dollars(7.5); got != want {
		t.Errorf("Cost = %v, want %v", got, want)
	}
	// 42 × $2.50 + 3 × $10 per million: $0.000135, exactly.
	if got, want := Cost(p, 42, 3), usage.Picodollars(135_000_000); got != want {
		t.Errorf("Cost = %v, want %v", got, want)
	}
	// Prices with six decimals: 1,234,567 × $0.123457 + 7,654,321 × $1.000001 per million is
	// $0.152415938119 + $7.654328654321 = $7.80674459244, every digit kept (float64 arithmetic and the old
	// rounding to 1e-8 both lose some).
	p = experiment.Price{InputPerMTok: 0.123457, OutputPerMTok: 1.000001}
	if got, want := Cost(p, 1_234_567, 7_654_321).String(), "7.80674459244"; got != want {
		t.Errorf("Cost = %v, want %v", got, want)
	}
	if got := Cost(experiment.Price{}, 1000, 1000); got != 0 {
		t.Errorf("Cost of an unknown price = %v, want 0", got)
	}
}

func TestBatchPriceFor(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name   string
		m      experiment.Model
		in     float64
		out    float64
		wantOK bool
	}{
		{"table price at half", experiment.Model{Name: "gpt-4o-mini"}, 0.075, 0.30, true},
		{"spec price at half", experiment.Model{Name: "x", Price: &experiment.Price{InputPerMTok: 1, OutputPerMTok: 4}}, 0.5, 2, true},
		{"a discount alone keeps the table price", experiment.Model{Name: "gpt-4o-mini", Price: &experiment.Price{BatchDiscount: f(0.4)}}, 0.06, 0.24, true},
		{"explicit batch prices", experiment.Model{Name: "x", Price: &experiment.Price{BatchInputPerMTok: f(0.1), BatchOutputPerMTok: f(0.2)}}, 0.1, 0.2, true},
		{"one explicit batch price", experiment.Model{Name: "gpt-4o-mini", Price: &experiment.Price{BatchInputPerMTok: f(0.01)}}, 0.01, 0.30, true},
		{"unknown model", experiment.Model{Name: "mystery"}, 0, 0, false},
	}
	for _, tt := range tests {
		got, ok := BatchPriceFor(tt.m)
		if math.Abs(got.InputPerMTok-tt.in) > 1e-12 || math.Abs(got.OutputPerMTok-tt.out) > 1e-12 || ok != tt.wantOK {
			t.Errorf("%s: BatchPriceFor = %+v, %v; want %v/%v, %v", tt.name, got, ok, tt.in, tt.out, tt.wantOK)
		}
	}
	// A price section with only batch fields leaves the synchronous price to the table.
	if p, _ := PriceFor(experiment.Model{Name: "gpt-4o-mini", Price: &experiment.Price{BatchDiscount: f(0.4)}}); p.InputPerMTok != 0.15 {
		t.Errorf("sync price with a batch discount alone: %+v, want the table's 0.15", p)
	}
}
