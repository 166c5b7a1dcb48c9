package usage

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// USD is an amount of US dollars held as a whole number of picodollars (10⁻¹² USD). It is the one money type of
// silico: a cell's cost, every total of costs, what the cache and batch pricing saved. Adding USD values is
// exact, so the per-cell costs of a run add up to its totals to the last digit, whichever order they are
// added in; an int64 holds up to about $9.2 million.
//
// In JSON a USD is a number of dollars written with every digit it has ("0.00000015", at most 12 decimals),
// the same key and meaning as the float64 dollars that silico wrote before, which it still reads (exponent
// forms included, rounded to the picodollar).
type USD int64

// picosPerUSD is the number of units of USD in one dollar.
const picosPerUSD = 1_000_000_000_000

// picoDigits is the number of decimals of a dollar amount that a USD holds.
const picoDigits = 12

// Dollars is f US dollars rounded to the nearest picodollar (halves away from zero). A USD converted to float64
// by Float and back by Dollars is unchanged for any amount below about $2,000, so a cost stored as a float64
// (the results store's cost_usd column) reads back exactly.
func Dollars(f float64) USD { return USD(math.Round(f * picosPerUSD)) }

// Picodollars is n picodollars.
func Picodollars(n int64) USD { return USD(n) }

// Picodollars is d as a number of picodollars.
func (d USD) Picodollars() int64 { return int64(d) }

// Float is d in dollars as the nearest float64, for arithmetic that need not be exact (estimates, metrics).
func (d USD) Float() float64 { return float64(d) / picosPerUSD }

// Rat is d in dollars, exactly.
func (d USD) Rat() *big.Rat { return big.NewRat(int64(d), picosPerUSD) }

// String writes d in dollars with every digit it has and no trailing zeros: "0.00000015", "1.5", "0", "-0.2".
func (d USD) String() string { return string(d.AppendText(nil)) }

// Display is d as every message shows money: a dollar sign and every digit d has ("$0.004773", "$12.5", "$0"),
// so an amount is never shown rounded to another ($0.007 as "$0.01", $0.004773 as "$0.0000"). A float64 amount
// (a budget, a share of it) is shown as Dollars(f).Display().
func (d USD) Display() string {
	if d < 0 {
		return "-" + (-d).Display()
	}
	return string(append([]byte{'$'}, d.AppendText(nil)...))
}

// AppendText appends String's form of d to b.
func (d USD) AppendText(b []byte) []byte {
	n := uint64(d)
	if d < 0 {
		b = append(b, '-')
		n = -n
	}
	b = strconv.AppendUint(b, n/picosPerUSD, 10)
	frac := n % picosPerUSD
	if frac == 0 {
		return b
	}
	var digits [picoDigits]byte
	for i := picoDigits - 1; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(append(b, '.'), strings.TrimRight(string(digits[:]), "0")...)
}

// MarshalJSON writes d as a JSON number of dollars, String's form.
func (d USD) MarshalJSON() ([]byte, error) { return d.AppendText(nil), nil }

// UnmarshalJSON reads a JSON number of dollars (ParseUSD); null leaves d as it is, as for any JSON number.
func (d *USD) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	v, err := ParseUSD(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

var errUSDRange = errors.New("out of range")

// ParseUSD reads an amount of dollars written as a decimal number, perhaps with an exponent ("0.00000015",
// "1.5e-07"), rounded to the nearest picodollar (halves away from zero).
func ParseUSD(s string) (USD, error) {
	if v, ok := parsePlainUSD(s); ok {
		return v, nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || strings.ContainsAny(s, "/") {
		return 0, fmt.Errorf("usage: %q is not an amount of dollars", s)
	}
	v, ok := roundRat(r.Mul(r, big.NewRat(picosPerUSD, 1)))
	if !ok {
		return 0, fmt.Errorf("usage: $%s: %w", s, errUSDRange)
	}
	return v, nil
}

// parsePlainUSD reads the common form, [-]digits[.digits] with at most 12 decimals, without allocating.
func parsePlainUSD(s string) (USD, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(whole) > 6 || len(frac) > picoDigits {
		return 0, false
	}
	var n uint64
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + uint64(c-'0')
		}
	}
	for range picoDigits - len(frac) {
		n *= 10
	}
	if neg {
		return -USD(n), true
	}
	return USD(n), true
}

// roundRat rounds r to the nearest integer, halves away from zero; ok is false when that is not an int64.
func roundRat(r *big.Rat) (USD, bool) {
	num, den := new(big.Int).Abs(r.Num()), r.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Lsh(m, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if r.Sign() < 0 {
		q.Neg(q)
	}
	if !q.IsInt64() {
		return 0, false
	}
	return USD(q.Int64()), true
}

// PerMTok is the cost of tokens at prices in dollars per million tokens: Σ tokensᵢ × priceᵢ / 10⁶, each price
// taken to the picodollar (Dollars) and the sum rounded once, to the nearest picodollar, halves away from zero.
// A price with at most 6 decimals therefore costs every call exactly. tokens and prices go in pairs:
// PerMTok(promptTokens, inputPrice, completionTokens, outputPrice).
func PerMTok(tokens1 int, price1 float64, tokens2 int, price2 float64) USD {
	p1, p2 := Dollars(price1), Dollars(price2)
	if tokens1 >= 0 && tokens2 >= 0 && p1 >= 0 && p2 >= 0 {
		// Σ fits 128 bits; the quotient by 10⁶ fits int64 for any real call, else the exact path below says so.
		h1, l1 := bits.Mul64(uint64(tokens1), uint64(p1))
		h2, l2 := bits.Mul64(uint64(tokens2), uint64(p2))
		lo, c := bits.Add64(l1, l2, 0)
		hi, c := bits.Add64(h1, h2, c)
		if c == 0 && hi < 1e6 {
			q, rem := bits.Div64(hi, lo, 1e6)
			if rem >= 1e6/2 {
				q++
			}
			if q <= math.MaxInt64 {
				return USD(q)
			}
		}
	}
	sum := new(big.Int).Mul(big.NewInt(int64(tokens1)), big.NewInt(int64(p1)))
	sum.Add(sum, new(big.Int).Mul(big.NewInt(int64(tokens2)), big.NewInt(int64(p2))))
	v, ok := roundRat(new(big.Rat).SetFrac(sum, big.NewInt(1e6)))
	if !ok {
		if sum.Sign() < 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return v
}
