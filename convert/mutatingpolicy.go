package convert

func (r *Result) kyvernoMutatingPolicy(d doc) {
	r.refuse(d.src, "spec", "Kyverno MutatingPolicy: not converted yet")
}
