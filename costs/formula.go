package costs

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Formula is the static cost of an expression (or the sum of a budget) as
// a polynomial in the sizes of the lists and maps it depends on: n(path)
// is the number of items of the list or entries of the map at path
// ([*]: of each item). It is derived from the CEL estimator itself, by
// evaluating it at several sizes of each input (strings held at their
// profile length) and interpolating.
type Formula struct {
	// Text is the formula as printed, e.g.
	// "14 + 9·n(object.spec.containers) + 3·n(object.spec.containers)·n(object.spec.containers[*].env)".
	Text  string `json:"text"`
	Terms []Term `json:"terms"`
	// Inputs are the sizes the formula depends on, with their profile size.
	Inputs []FormulaInput `json:"inputs,omitempty"`
	// Approximate is set when the estimator is not exactly a polynomial of
	// these degrees in its inputs (checked at another point), or when the
	// least influential inputs were held at their profile size because
	// there were too many to vary.
	Approximate bool `json:"approximate,omitempty"`
}

// Term is one monomial of a Formula: Coefficient times the product of
// n(input) over Inputs (an input repeated k times is raised to k).
type Term struct {
	Coefficient float64  `json:"coefficient"`
	Inputs      []string `json:"inputs,omitempty"`
}

// FormulaInput is one size a Formula depends on.
type FormulaInput struct {
	Path string `json:"path"`
	Kind string `json:"kind,omitempty"`
	// Profile is its size at the profile point and ProfileKey the
	// profile entry that gives it.
	Profile    int64  `json:"profile"`
	ProfileKey string `json:"profileKey"`
}

// SuperLinear flags a term of a formula that grows faster than the data
// it reads: a power of one size (nested comprehensions over the same list,
// indexOf or exists inside a map() over it) or a product of sizes of which
// none is inside the other. A product like n(containers)·n(containers[*].env)
// is not flagged: it counts each env var once.
type SuperLinear struct {
	// Term is the flagged term as printed, Degree its degree.
	Term   string `json:"term"`
	Degree int    `json:"degree"`
	// Inputs drive it; Uses are the constructs that iterate them.
	Inputs []string `json:"inputs"`
	Uses   []string `json:"uses,omitempty"`
	// Growth is "quadratic", "cubic" or "degree N".
	Growth string `json:"growth"`
}

// poly is a polynomial: monomial key (sorted input keys joined by "\x1f",
// repeated for powers) → coefficient.
type poly map[string]float64

func (p poly) add(q poly) poly {
	out := poly{}
	for k, v := range p {
		out[k] += v
	}
	for k, v := range q {
		out[k] += v
	}
	return out
}

// eval evaluates p at sizes (missing inputs are 0).
func (p poly) eval(sizes map[string]float64) float64 {
	var sum float64
	for k, c := range p {
		t := c
		for _, in := range monomialInputs(k) {
			t *= sizes[in]
		}
		sum += t
	}
	return sum
}

func monomialInputs(k string) []string {
	if k == "" {
		return nil
	}
	return strings.Split(k, "\x1f")
}

// formulaBase is the size unit of the interpolation grid: the estimator's
// string costs (a tenth of a unit per character) stay whole at its
// multiples.
const formulaBase = 100

// maxFormulaInputs and maxFormulaPoints bound the work of one fit.
const (
	maxFormulaInputs = 6
	maxFormulaPoints = 729
	maxFormulaDegree = 3
)

// fitFormula interpolates f, the estimator's worst case as a function of
// the sizes of vars (every other input at its profile size), by a
// polynomial of degree at most maxFormulaDegree in each. ok is false when f
// fails.
func fitFormula(vars []string, f func(sizes map[string]uint64) (uint64, bool)) (poly, bool, bool) {
	approx := false
	at := func(t []int) (float64, bool) {
		sizes := map[string]uint64{}
		for i, v := range vars {
			sizes[v] = uint64(t[i] * formulaBase)
		}
		c, ok := f(sizes)
		if ok && c == math.MaxUint64 {
			return 0, false
		}
		return float64(c), ok
	}
	ones := func() []int {
		t := make([]int, len(vars))
		for i := range t {
			t[i] = 1
		}
		return t
	}
	// The degree of each input: finite differences along it.
	degrees := make([]int, len(vars))
	for i := range vars {
		var vals []float64
		for x := 1; x <= maxFormulaDegree+2; x++ {
			t := ones()
			t[i] = x
			v, ok := at(t)
			if !ok {
				return nil, false, false
			}
			vals = append(vals, v)
		}
		scale := math.Abs(vals[len(vals)-1]) + 1
		d := 0
		for order := 1; order <= maxFormulaDegree+1; order++ {
			next := make([]float64, len(vals)-1)
			nonzero := false
			for j := range next {
				next[j] = vals[j+1] - vals[j]
				if math.Abs(next[j]) > 1e-9*scale {
					nonzero = true
				}
			}
			vals = next
			if !nonzero {
				break
			}
			d = order
		}
		if d > maxFormulaDegree {
			d, approx = maxFormulaDegree, true
		}
		degrees[i] = d
	}
	// Values on the grid t_i ∈ {1..d_i+1}, then the coefficients in t along
	// each axis (inverse Vandermonde), then in n = t·formulaBase.
	dims := make([]int, len(vars))
	total := 1
	for i, d := range degrees {
		dims[i] = d + 1
		total *= dims[i]
	}
	if total > maxFormulaPoints {
		return nil, false, false // the caller varies fewer inputs
	}
	grid := make([]float64, total)
	idx := make([]int, len(vars))
	for n := 0; n < total; n++ {
		rem := n
		t := make([]int, len(vars))
		for i := len(vars) - 1; i >= 0; i-- {
			idx[i] = rem % dims[i]
			rem /= dims[i]
			t[i] = idx[i] + 1
		}
		v, ok := at(t)
		if !ok {
			return nil, false, false
		}
		grid[n] = v
	}
	stride := 1
	for i := len(vars) - 1; i >= 0; i-- {
		inv := vandermondeInverse(dims[i])
		for base := 0; base < total; base++ {
			if (base/stride)%dims[i] != 0 {
				continue
			}
			vals := make([]float64, dims[i])
			for j := range vals {
				vals[j] = grid[base+j*stride]
			}
			for r := range vals {
				var s float64
				for c := range vals {
					s += inv[r][c] * vals[c]
				}
				grid[base+r*stride] = s
			}
		}
		stride *= dims[i]
	}
	out := poly{}
	for n := 0; n < total; n++ {
		rem := n
		var parts []string
		deg := 0
		for i := len(vars) - 1; i >= 0; i-- {
			e := rem % dims[i]
			rem /= dims[i]
			for k := 0; k < e; k++ {
				parts = append(parts, vars[i])
			}
			deg += e
		}
		c := grid[n] / math.Pow(formulaBase, float64(deg))
		if math.Abs(c) < 1e-6 {
			continue
		}
		sort.Strings(parts)
		out[strings.Join(parts, "\x1f")] += c
	}
	// Check at another point.
	t := make([]int, len(vars))
	sizes := map[string]float64{}
	for i := range t {
		t[i] = maxFormulaDegree + 4
		sizes[vars[i]] = float64(t[i] * formulaBase)
	}
	if want, ok := at(t); ok {
		if got := out.eval(sizes); math.Abs(got-want) > 1e-6*math.Max(1, want) {
			approx = true
		}
	}
	for k, c := range out {
		out[k] = math.Round(c*100) / 100
		if out[k] == 0 {
			delete(out, k)
		}
	}
	return out, approx, true
}

// vandermondeInverse inverts the Vandermonde matrix of the nodes 1..n
// (rows: powers 0..n-1 of coefficients; V[r][c] = (c+1)^r transposed), so
// that coefficients = inv · values.
func vandermondeInverse(n int) [][]float64 {
	// a[r][c] = (r+1)^c: value at node r+1 of the monomial t^c.
	a := make([][]float64, n)
	inv := make([][]float64, n)
	for r := range a {
		a[r] = make([]float64, n)
		inv[r] = make([]float64, n)
		inv[r][r] = 1
		for c := range a[r] {
			a[r][c] = math.Pow(float64(r+1), float64(c))
		}
	}
	// Gauss-Jordan on a | I.
	for col := 0; col < n; col++ {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		a[col], a[piv] = a[piv], a[col]
		inv[col], inv[piv] = inv[piv], inv[col]
		p := a[col][col]
		for c := 0; c < n; c++ {
			a[col][c] /= p
			inv[col][c] /= p
		}
		for r := 0; r < n; r++ {
			if r == col || a[r][col] == 0 {
				continue
			}
			f := a[r][col]
			for c := 0; c < n; c++ {
				a[r][c] -= f * a[col][c]
				inv[r][c] -= f * inv[col][c]
			}
		}
	}
	return inv
}

// formulaOf renders p as a Formula.
func formulaOf(p poly, inputs []FormulaInput, approx bool) *Formula {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		di, dj := len(monomialInputs(keys[i])), len(monomialInputs(keys[j]))
		if di != dj {
			return di < dj
		}
		return keys[i] < keys[j]
	})
	f := &Formula{Inputs: inputs, Approximate: approx}
	var parts []string
	for _, k := range keys {
		ins := monomialInputs(k)
		f.Terms = append(f.Terms, Term{Coefficient: p[k], Inputs: ins})
		parts = append(parts, termText(p[k], ins))
	}
	if len(parts) == 0 {
		parts = []string{"0"}
	}
	f.Text = strings.ReplaceAll(strings.Join(parts, " + "), "+ -", "- ")
	if approx {
		f.Text = "≈ " + f.Text
	}
	return f
}

func termText(c float64, ins []string) string {
	coef := strconv.FormatFloat(c, 'f', -1, 64)
	if len(ins) == 0 {
		return coef
	}
	var factors []string
	for i := 0; i < len(ins); {
		j := i
		for j < len(ins) && ins[j] == ins[i] {
			j++
		}
		factor := "n(" + ins[i] + ")"
		if j-i > 1 {
			factor += "^" + strconv.Itoa(j-i)
		}
		factors = append(factors, factor)
		i = j
	}
	s := strings.Join(factors, "·")
	switch coef {
	case "1":
		return s
	case "-1":
		return "-" + s
	}
	return coef + "·" + s
}

// superLinear flags the terms of p that grow faster than the data.
func superLinear(p poly, uses map[string][]string) []SuperLinear {
	var out []SuperLinear
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ins := monomialInputs(k)
		if len(ins) < 2 || p[k] <= 0 || !growsFaster(ins) {
			continue
		}
		sl := SuperLinear{Term: termText(p[k], ins), Degree: len(ins), Growth: growthName(len(ins))}
		seen := map[string]bool{}
		for _, in := range ins {
			if !seen[in] {
				seen[in] = true
				sl.Inputs = append(sl.Inputs, in)
				for _, u := range iterating(uses[in]) {
					if !contains(sl.Uses, u) {
						sl.Uses = append(sl.Uses, u)
					}
				}
			}
		}
		out = append(out, sl)
	}
	return out
}

// growsFaster tells whether a monomial grows faster than the data it
// reads: unless every factor is a distinct list nested in the previous one
// (n(a)·n(a[*].b) counts the b of every a once).
func growsFaster(ins []string) bool {
	sorted := append([]string(nil), ins...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) < len(sorted[j]) })
	for i := 1; i < len(sorted); i++ {
		if !strings.HasPrefix(sorted[i], sorted[i-1]+"[*]") {
			return true
		}
	}
	return false
}

// iterating keeps the uses that iterate or search an input (comprehensions,
// calls, in, ==, !=), not the operators that only pass it on (+, ?:,
// index).
func iterating(uses []string) []string {
	var out []string
	for _, u := range uses {
		if strings.HasSuffix(u, "()") || u == "in" || u == "==" || u == "!=" {
			out = append(out, u)
		}
	}
	return out
}

func growthName(d int) string {
	switch d {
	case 1:
		return "linear"
	case 2:
		return "quadratic"
	case 3:
		return "cubic"
	}
	return fmt.Sprintf("degree %d", d)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
