package costs

import (
	"fmt"
	"math"
	"sort"
)

// Measured is the runtime cost of an expression measured on objects (mutatis
// cost --measure, with the harness of mutatis bench --scale): every list of
// each object multiplied by each scale. It confirms, or not, the growth the
// static formula predicts.
type Measured struct {
	// Scales and RuntimeCost: the largest runtime cost over the objects
	// and bindings at each scale.
	Scales      []int   `json:"scales"`
	RuntimeCost []int64 `json:"runtimeCost"`
	// Exponent is the measured growth: cost ∝ scale^Exponent between the
	// two largest scales.
	Exponent float64 `json:"exponent"`
	// Growth names the measured degree ("constant", "linear",
	// "quadratic"…), Static the degree of the formula when every list
	// grows with the scale, and Agrees whether they are the same.
	Growth string `json:"growth"`
	Static string `json:"static,omitempty"`
	Agrees bool   `json:"agrees"`
	// Errors are evaluation errors at some scale, if any.
	Errors []string `json:"errors,omitempty"`
}

// NewMeasured computes the growth of costs measured at scales (ascending)
// and compares it with f's degree (nil: not compared).
func NewMeasured(scales []int, costs []int64, f *Formula) *Measured {
	m := &Measured{Scales: scales, RuntimeCost: costs}
	n := len(scales)
	if n >= 2 && costs[n-2] > 0 && costs[n-1] > 0 && scales[n-1] > scales[n-2] {
		m.Exponent = math.Round(math.Log(float64(costs[n-1])/float64(costs[n-2]))/math.Log(float64(scales[n-1])/float64(scales[n-2]))*100) / 100
	}
	m.Growth = degreeName(int(math.Round(m.Exponent)))
	if f != nil {
		m.Static = degreeName(f.Degree())
		m.Agrees = m.Static == m.Growth
	}
	return m
}

// Degree is the largest degree of the formula's terms in the sizes of
// lists: how the cost grows when every list grows by the same factor (as
// mutatis bench --scale grows them; maps keep their entries).
func (f *Formula) Degree() int {
	maps := map[string]bool{}
	for _, in := range f.Inputs {
		if in.Kind == "map" {
			maps[in.Path] = true
		}
	}
	d := 0
	for _, t := range f.Terms {
		n := 0
		for _, in := range t.Inputs {
			if !maps[in] {
				n++
			}
		}
		if n > d && t.Coefficient > 0 {
			d = n
		}
	}
	return d
}

func degreeName(d int) string {
	if d <= 0 {
		return "constant"
	}
	return growthName(d)
}

// Sample is one runtime cost measured by the harness of mutatis bench: an
// expression of a policy evaluated on a fixture at a scale, or the error
// it failed with.
type Sample struct {
	Policy, Path, Fixture string
	Scale                 int
	RuntimeCost           int64
	Err                   string
}

// Record sets the Measured of every expression of r that samples measured:
// the largest runtime cost at each scale, its growth beside the formula's,
// and the errors.
func (r *Report) Record(samples []Sample) {
	type key struct{ policy, path string }
	worst := map[key]map[int]int64{}
	errs := map[key][]string{}
	for _, m := range samples {
		k := key{m.Policy, m.Path}
		if m.Err != "" {
			errs[k] = append(errs[k], fmt.Sprintf("%s at ×%d: %s", m.Fixture, m.Scale, m.Err))
			continue
		}
		if worst[k] == nil {
			worst[k] = map[int]int64{}
		}
		if m.RuntimeCost > worst[k][m.Scale] {
			worst[k][m.Scale] = m.RuntimeCost
		}
	}
	// The ValidatingAdmissionPolicies' too, unless a MutatingAdmissionPolicy
	// has the name (its samples are the mutating one's: harness leaves
	// such a ValidatingAdmissionPolicy out).
	mutating := map[string]bool{}
	policies := make([]*Policy, 0, len(r.Policies)+len(r.ValidatingPolicies))
	for i := range r.Policies {
		mutating[r.Policies[i].Name] = true
		policies = append(policies, &r.Policies[i])
	}
	for i := range r.ValidatingPolicies {
		if !mutating[r.ValidatingPolicies[i].Name] {
			policies = append(policies, &r.ValidatingPolicies[i])
		}
	}
	for _, p := range policies {
		for ei := range p.Expressions {
			e := &p.Expressions[ei]
			k := key{p.Name, e.Path}
			byScale := worst[k]
			if len(byScale) == 0 && len(errs[k]) == 0 {
				continue
			}
			var scales []int
			for s := range byScale {
				scales = append(scales, s)
			}
			sort.Ints(scales)
			var cs []int64
			for _, s := range scales {
				cs = append(cs, byScale[s])
			}
			e.Measured = NewMeasured(scales, cs, e.Formula)
			e.Measured.Errors = errs[k]
		}
	}
}
