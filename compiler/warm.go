package compiler

import "k8s.io/apiserver/pkg/cel/environment"

// warmExpressions are parsed by Warm to fill cel-go's parser tables with
// the shapes MutatingAdmissionPolicy expressions take: a JSONPatch list, an
// ApplyConfiguration object, a match condition with macros and optionals,
// literals of every kind. Their results are thrown away.
var warmExpressions = []string{
	`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b"), value: "x"}]`,
	`Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{labels: {"k": params.v}}}}}`,
	`!has(object.metadata.labels) || object.spec.containers.exists(c, c.name == 'x' && c.?image.orValue("") != "") ? [1, -4][0] == 1 && 2.5 > 0.0 && 3u != 0u && b"x" != b"" && params != null : params.v.size() > 0`,
	`request.userInfo.groups.all(g, g.startsWith("system:")) && int(object.spec.replicas) in [1, 2] || authorizer.group("").resource("pods").check("get").allowed()`,
}

// Warm builds, ahead of need, what every Compiler of the process shares
// and builds once: the base environments, the plan check of each
// environment in both modes (API validation's and admission's), and
// cel-go's parser tables (its grammar's automaton, built by the first
// parse, and the prediction cache that the first parses of each shape
// fill). It changes no result, only when the cost is paid: a command-line
// process calls it on a spare core while the rest of the program
// initialises (internal/warmstart). Safe to call concurrently with
// anything and any number of times; a failure is left for New to report.
func Warm() {
	b, err := loadBaseEnvs()
	if err != nil {
		return
	}
	keys := []envKey{{}, {hasPatchTypes: true}, {hasParams: true}, {hasParams: true, hasPatchTypes: true}}
	for _, mode := range []environment.Type{environment.NewExpressions, environment.StoredExpressions} {
		for _, k := range keys {
			env, err := b.envs[k].Env(mode)
			if err != nil {
				return
			}
			b.checks.get(env)
		}
	}
	env, err := b.envs[envKey{hasParams: true, hasPatchTypes: true}].Env(environment.StoredExpressions)
	if err != nil {
		return
	}
	for _, src := range warmExpressions {
		env.Parse(src)
	}
}
