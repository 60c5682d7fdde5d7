// Command kyverno records Kyverno v1.19's answers for the convert corpus:
// every ClusterPolicy/Policy file of testdata/corpus/kyverno and every
// MutatingPolicy file of testdata/corpus/kyverno-mpol through
// Kyverno's own engine the way `kyverno apply` runs it (the CLI's
// policy loader, policy validation and processor.PolicyProcessor, which
// calls pkg/engine's Mutate) on every input object of testdata/oracle/inputs
// (the corpus objects as kube-apiserver hands them to admission webhooks;
// recorded by convert's TestOracleInputs). It writes
// testdata/oracle/kyverno/<file>.yaml (kyverno-mpol/ for MutatingPolicies),
// in the format of the Gatekeeper recorder's.
//
// It is a module of its own (Kyverno's module graph is heavy and needs
// Kyverno's replace of k8s.io/pod-security-admission), run by
// `make convert-oracle`, never by CI: CI checks the converter against the
// answers committed.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	policiesv1beta1 "github.com/kyverno/api/api/policies.kyverno.io/v1beta1"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno/policy"
	"github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno/processor"
	"github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno/store"
	"github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno/variables"
	"github.com/kyverno/kyverno/pkg/config"
	engineapi "github.com/kyverno/kyverno/pkg/engine/api"
	policyvalidation "github.com/kyverno/kyverno/pkg/validation/policy"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kyverno TESTDATA")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Answer is Kyverno's result on one object: the object it patched, or
// the error its rules ended in (a rule status error or an engine failure),
// or neither (no rule applied, or the rules were skipped).
type Answer struct {
	Object  string         `json:"object"`
	Mutated bool           `json:"mutated"`
	Error   string         `json:"error,omitempty"`
	Result  map[string]any `json:"result,omitempty"`
}

// Answers are the answers of one corpus file; Refused is Kyverno's own
// refusal of the policy (its validation), when it refuses it.
type Answers struct {
	Engine  string   `json:"engine"`
	Policy  string   `json:"policy"`
	Refused string   `json:"refused,omitempty"`
	Answers []Answer `json:"answers"`
}

// configMaps resolves a configMap context from the corpus objects, as a
// cluster holding them would.
type configMaps map[string]*corev1.ConfigMap

func (c configMaps) Get(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if cm, ok := c[namespace+"/"+name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func run(testdata string) error {
	inputs, err := filepath.Glob(filepath.Join(testdata, "oracle", "inputs", "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(inputs)
	var objects []*unstructured.Unstructured
	cms := configMaps{}
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			return err
		}
		var o map[string]any
		if err := yaml.Unmarshal(b, &o); err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		u := &unstructured.Unstructured{Object: o}
		objects = append(objects, u)
		if u.GetKind() == "ConfigMap" {
			var cm corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, &cm); err != nil {
				return fmt.Errorf("%s: %w", in, err)
			}
			cms[cm.Namespace+"/"+cm.Name] = &cm
		}
	}
	// ClusterPolicies and Policies, then MutatingPolicies.
	for _, dir := range []string{"kyverno", "kyverno-mpol"} {
		files, err := filepath.Glob(filepath.Join(testdata, "corpus", dir, "*.yaml"))
		if err != nil {
			return err
		}
		sort.Strings(files)
		out := filepath.Join(testdata, "oracle", dir)
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		for _, f := range files {
			a, err := record(dir, f, inputs, objects, cms)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			b, err := yaml.Marshal(a)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func record(dir, f string, inputs []string, objects []*unstructured.Unstructured, cms configMaps) (*Answers, error) {
	a := &Answers{Engine: "kyverno v1.19.1 kyverno apply (cmd/cli/kubectl-kyverno/processor)", Policy: filepath.ToSlash(filepath.Join("corpus", dir, filepath.Base(f)))}
	loaded, err := policy.Load(nil, "", f)
	if err != nil {
		// As `kyverno apply`: a file Kyverno's loader refuses is not applied.
		a.Refused = strings.ReplaceAll(err.Error(), f, filepath.Base(f))
		for _, in := range inputs {
			a.Answers = append(a.Answers, Answer{Object: strings.TrimSuffix(filepath.Base(in), ".yaml")})
		}
		return a, nil
	}
	// As `kyverno apply`: a policy Kyverno's validation refuses is skipped.
	sa := config.KyvernoUserName(config.KyvernoServiceAccountName())
	var pols []kyvernov1.PolicyInterface
	var refused []string
	for _, p := range loaded.Policies {
		if _, err := policyvalidation.Validate(p, nil, nil, true, sa, sa); err != nil {
			refused = append(refused, p.GetName()+": "+err.Error())
			continue
		}
		pols = append(pols, p)
	}
	a.Refused = strings.Join(refused, "; ")
	for i, u := range objects {
		ans := Answer{Object: strings.TrimSuffix(filepath.Base(inputs[i]), ".yaml")}
		if len(pols) > 0 || len(loaded.MutatingPolicies) > 0 {
			patched, errs, err := apply(pols, loaded.MutatingPolicies, u.DeepCopy(), cms)
			switch {
			case err != nil:
				ans.Error = err.Error()
			case len(errs) > 0:
				ans.Error = strings.Join(errs, "; ")
			case patched != nil:
				ans.Mutated = true
				ans.Result = patched.Object
			}
		}
		a.Answers = append(a.Answers, ans)
	}
	return a, nil
}

// apply runs the policies on one object as `kyverno apply` does, and
// gives the patched object when a rule changed it, and the rules that
// ended in an error.
func apply(pols []kyvernov1.PolicyInterface, mpols []policiesv1beta1.MutatingPolicyLike, u *unstructured.Unstructured, cms configMaps) (*unstructured.Unstructured, []string, error) {
	vars, err := variables.New(io.Discard, nil, "", "", nil)
	if err != nil {
		return nil, nil, err
	}
	var st store.Store
	st.SetLocal(true)
	vars.SetInStore(&st)
	var rc processor.ResultCounts
	ns := map[string]map[string]string{}
	if n := u.GetNamespace(); n != "" {
		ns[n] = map[string]string{"kubernetes.io/metadata.name": n}
	}
	p := processor.PolicyProcessor{
		Store:                &st,
		Policies:             pols,
		MutatingPolicies:     mpols,
		Resource:             *u,
		Variables:            vars,
		NamespaceSelectorMap: ns,
		Rc:                   &rc,
		PrintPatchResource:   true,
		Out:                  io.Discard,
		ConfigMapResolver:    cms,
	}
	resps, err := p.ApplyPoliciesOnResource()
	if err != nil {
		return nil, nil, err
	}
	var errs []string
	changed := false
	last := u
	for _, r := range resps {
		for _, rr := range r.PolicyResponse.Rules {
			switch rr.Status() {
			case engineapi.RuleStatusError:
				errs = append(errs, r.Policy().GetName()+"/"+rr.Name()+": "+rr.Message())
			case engineapi.RuleStatusPass:
				changed = true
			}
		}
		pr := r.PatchedResource
		last = &pr
	}
	if !changed {
		return nil, errs, nil
	}
	return last, errs, nil
}
