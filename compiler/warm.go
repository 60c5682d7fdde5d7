package compiler

import "k8s.io/apiserver/pkg/cel/environment"

// Warm builds, ahead of need, what every Compiler of the process shares
// and builds once: the base environments, the plan check of each of them
// in both modes (API validation's and admission's), and the environments
// without variables that policies compile in. Safe to call concurrently
// with anything, any number of times; a failure is left for New to report.
// cmd/mutatis' main starts it on a spare core (internal/warmstart).
func Warm() {
	b, err := loadBaseEnvs()
	if err != nil {
		return
	}
	// The environments of policies without params first: most are; those
	// of ValidatingAdmissionPolicies' messageExpressions last.
	keys := []envKey{{}, {hasPatchTypes: true}, {hasParams: true}, {hasParams: true, hasPatchTypes: true},
		{noAuthorizer: true}, {hasParams: true, noAuthorizer: true}}
	for _, k := range keys {
		for _, mode := range []environment.Type{environment.NewExpressions, environment.StoredExpressions} {
			env, err := b.envs[k].Env(mode)
			if err != nil {
				return
			}
			b.checks.get(env)
		}
	}
	// The environments without variables that policies compile in.
	for _, k := range keys {
		for _, mode := range []environment.Type{environment.NewExpressions, environment.StoredExpressions} {
			if _, err := b.unvariedEnv(k, mode); err != nil {
				return
			}
		}
	}
}
