package usage

import (
	"encoding/json"
	"math"
	"testing"
)

func TestUSDString(t *testing.T) {
	for _, tc := range []struct {
		v    USD
		want string
	}{
		{0, "0"}, {1, "0.000000000001"}, {Picodollars(150_000), "0.00000015"}, {Dollars(1.5), "1.5"},
		{Dollars(2), "2"}, {Picodollars(123_456_789_012), "0.123456789012"}, {-Dollars(0.2), "-0.2"},
		{math.MaxInt64, "9223372.036854775807"}, {math.MinInt64, "-9223372.036854775808"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("USD(%d).String() = %q, want %q", int64(tc.v), got, tc.want)
		}
	}
}

// TestUSDJSON: a USD is written with every digit and read back unchanged; the float64 dollars of older payloads
// (exponent forms included) read as the picodollars they round to.
func TestUSDJSON(t *testing.T) {
	for _, v := range []USD{0, 1, Picodollars(123_456_789_012), Dollars(0.6390), -Picodollars(7), math.MaxInt64, math.MinInt64} {
		b, err := json.Marshal(Usage{CostUSD: v})
		if err != nil {
			t.Fatal(err)
		}
		var u Usage
		if err := json.Unmarshal(b, &u); err != nil || u.CostUSD != v {
			t.Errorf("%s read back as %v, %v; want %v", b, u.CostUSD, err, v)
		}
	}
	for text, want := range map[string]USD{
		"1.5e-07": Picodollars(150_000), "0.0000125": Picodollars(12_500_000), "3": Dollars(3), "-0.25": -Dollars(0.25),
		"1e-13": 0, "5e-13": 1, "-5e-13": -1, "0.1234567890125": Picodollars(123_456_789_013), "null": Picodollars(42),
		"2.0000000000000004": Dollars(2), "1E2": Dollars(100), "1234567.5": Picodollars(1_234_567_500_000_000_000),
	} {
		got := Picodollars(42)
		if err := json.Unmarshal([]byte(text), &got); err != nil || got != want {
			t.Errorf("%s read as %v, %v; want %v", text, got, err, want)
		}
	}
	for _, bad := range []string{`"1"`, "1e7", "-9.3e6", "true"} {
		var got USD
		if err := json.Unmarshal([]byte(bad), &got); err == nil {
			t.Errorf("%s read as %v, want an error", bad, got)
		}
	}
}

// TestDollarsRoundTrip: a cost stored as float64 dollars reads back as the same picodollars, which is what the
// results store relies on.
func TestDollarsRoundTrip(t *testing.T) {
	for _, v := range []USD{1, 7, 999_999_999_999, 123_456_789_012, Picodollars(1_999_999_999_999_999), 1 << 50} {
		if got := Dollars(v.Float()); got != v {
			t.Errorf("Dollars(%v.Float()) = %v", v, got)
		}
	}
	if got := Dollars(0.15); got != Picodollars(150_000_000_000) {
		t.Errorf("Dollars(0.15) = %d picodollars", int64(got))
	}
}

// TestPerMTok: prices with many decimals cost every call exactly, rounded once; halves round away from zero.
func TestPerMTok(t *testing.T) {
	for _, tc := range []struct {
		t1   int
		p1   float64
		t2   int
		p2   float64
		want string
	}{
		{1_234_567, 0.123457, 7_654_321, 1.000001, "7.80674459244"},
		{3, 0.0617285, 0, 0, "0.000000185186"}, // 185,185.5 picodollars
		{1, 0.0000005, 0, 0, "0.000000000001"}, // half a picodollar
		{1, 0.0000004, 0, 0, "0"},
		{1_000_000, 2.5, 500_000, 10, "7.5"},
		{0, 0, 0, 0, "0"},
		{math.MaxInt32, 60, math.MaxInt32, 60, "257698.03764"}, // 128-bit products
		{1 << 40, 1e6, 0, 0, "9223372.036854775807"},           // beyond int64: the largest USD
		{-1_000_000, 1, 0, 0, "-1"},                            // the exact path
	} {
		if got := PerMTok(tc.t1, tc.p1, tc.t2, tc.p2).String(); got != tc.want {
			t.Errorf("PerMTok(%d, %v, %d, %v) = %s, want %s", tc.t1, tc.p1, tc.t2, tc.p2, got, tc.want)
		}
	}
}

// TestUSDDisplay: money in a message has every digit its amount has.
func TestUSDDisplay(t *testing.T) {
	for _, c := range []struct {
		d    USD
		want string
	}{{Dollars(0.007), "$0.007"}, {Dollars(0.004773), "$0.004773"}, {0, "$0"}, {Dollars(12.5), "$12.5"},
		{Picodollars(1), "$0.000000000001"}, {Dollars(-0.2), "-$0.2"}} {
		if got := c.d.Display(); got != c.want {
			t.Errorf("%d picodollars: %q, want %q", c.d.Picodollars(), got, c.want)
		}
	}
}
