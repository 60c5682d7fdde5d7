package engine

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/mutatis-dev/mutatis/binding"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/mutation"
	"github.com/mutatis-dev/mutatis/params"
)

// Hook is one compiled policy with its bindings, in evaluation order.
type Hook struct {
	Policy   *admissionregistrationv1.MutatingAdmissionPolicy
	Compiled *compiler.Policy
	Bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// NewHooks compiles policies and groups their bindings (binding.Group order:
// policy name, then binding name).
func NewHooks(c *compiler.Compiler, policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) ([]Hook, error) {
	var hooks []Hook
	for _, g := range binding.Group(policies, bindings) {
		cp, err := c.Compile(g.Policy)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, Hook{Policy: g.Policy, Compiled: cp, Bindings: g.Bindings})
	}
	return hooks, nil
}

// Config is what an Evaluator needs besides the hooks: what lives as long
// as the process or the simulated cluster (the sources of namespaces and
// params, the schemas and the scheme with their per-kind plans, the
// authorizer, the metrics hooks), shared by every policy set swapped into
// an Engine. Each collaborator is given once: the namespaces are the
// Matcher's, and the params are presented with the Patcher's scheme
// unless the Collector has its own.
type Config struct {
	// Matcher matches policies and bindings; its namespace getter also
	// gives namespaceObject.
	Matcher *matching.Matcher
	// Params resolves the bindings' params.
	Params *params.Collector
	// Patcher applies mutations.
	Patcher *mutation.Patcher
	// Metrics, when set, observes every evaluated mutation.
	Metrics Metrics
	// Authorizer backs the CEL authorizer variables; nil denies every check.
	Authorizer authorizer.Authorizer
}

// complete fills in what cfg leaves to its defaults: an authorizer that
// denies, and the Patcher's scheme for presenting params. The params are
// collected by the Evaluator's own copy of the Collector, which presents
// each param object once (params.Memo, unless the Collector has its
// own), not on every request: a Source never changes an object it has
// handed out, so a changed param is a new object, presented anew.
func (cfg Config) complete() Config {
	if cfg.Authorizer == nil {
		cfg.Authorizer = authorizerfactory.NewAlwaysDenyAuthorizer()
	}
	if cfg.Params != nil {
		p := *cfg.Params
		if p.Scheme == nil && cfg.Patcher != nil {
			p.Scheme = cfg.Patcher.Scheme
		}
		if p.Memo == nil {
			p.Memo = new(params.Memo)
		}
		cfg.Params = &p
	}
	return cfg
}
