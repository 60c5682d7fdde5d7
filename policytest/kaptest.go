package policytest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mutatis-dev/mutatis/manifest"
)

// kaptest (github.com/pfnet/kaptest) tests policies with a manifest file,
// kaptest.yaml by `kaptest init`'s convention, in a <policy>.test/
// directory: the policies and the resources (the objects its tests name)
// as files; vapTestSuites (testSuites before v0.2): per
// ValidatingAdmissionPolicy, tests naming an object (and an old object;
// an old object alone is a DELETE) among the resources by kind and name,
// and what must come of it — admit, deny (with deniedMessage, the
// validation's message), skip or error; and, since kaptest tests
// MutatingAdmissionPolicies, mapTestSuites: likewise, mutate (and
// expectObject, the resource the object must become), admit, skip or
// error. The v0.2 (version v1alpha1) manifests add crds (files of
// CustomResourceDefinitions), skipSchemaValidation, a suite's binding
// and a MAP test's disableNameOverwrite. mutatis reads such a file as a
// suite (KaptestSuite).

// KaptestFile is the name `kaptest init` gives a test manifest.
const KaptestFile = "kaptest.yaml"

// IsKaptestFile tells whether file is a kaptest manifest with tests of
// MutatingAdmissionPolicies.
func IsKaptestFile(file string) bool {
	if b := filepath.Base(file); b != KaptestFile && b != "kaptest.yml" {
		return false
	}
	return fileContains(file, "mapTestSuites:") || fileContains(file, "vapTestSuites:") || fileContains(file, "testSuites:")
}

// kaptestVersion is the version of kaptest's manifests v0.2 writes.
const kaptestVersion = "v1alpha1"

type kaptestFile struct {
	// Version is v1alpha1 for kaptest v0.2's manifests, empty before.
	Version string `json:"version"`
	// CRDs are files of the CustomResourceDefinitions of the resources.
	CRDs []string `json:"crds"`
	// SkipSchemaValidation skips kaptest's validation of the resources
	// against JSON schemas, which mutatis does not do (the resources are
	// read as written).
	SkipSchemaValidation bool     `json:"skipSchemaValidation"`
	Policies             []string `json:"policies"`
	// ValidatingAdmissionPolicies is the older name of Policies.
	ValidatingAdmissionPolicies []string `json:"validatingAdmissionPolicies"`
	Resources                   []string `json:"resources"`
	SchemaLocations             []string `json:"schemaLocations"`
	// TestSuites is the older name of VAPTestSuites.
	TestSuites    []kaptestPolicyT `json:"testSuites"`
	VAPTestSuites []kaptestPolicyT `json:"vapTestSuites"`
	MAPTestSuites []kaptestPolicyT `json:"mapTestSuites"`
}

type kaptestPolicyT struct {
	Policy string `json:"policy"`
	// Binding names the binding of the policy the tests go through
	// (v0.2); without it, kaptest evaluates the policy alone.
	Binding string        `json:"binding"`
	Tests   []kaptestCase `json:"tests"`
}

type kaptestRef struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type kaptestCase struct {
	Object       kaptestRef `json:"object"`
	OldObject    kaptestRef `json:"oldObject"`
	Param        kaptestRef `json:"param"`
	Expect       string     `json:"expect"`
	ExpectObject kaptestRef `json:"expectObject"`
	// DeniedMessage is the message of the validation that denies (VAP
	// tests).
	DeniedMessage string `json:"deniedMessage"`
	// DisableNameOverwrite compares the final object with expectObject as
	// it is, its name included (MAP tests, v0.2).
	DisableNameOverwrite bool `json:"disableNameOverwrite"`
	UserInfo             *struct {
		Name   string              `json:"name"`
		Groups []string            `json:"groups"`
		Extra  map[string][]string `json:"extra"`
	} `json:"userInfo"`
}

// ref is the ObjectRef of a kaptest object reference (nil when empty).
func (r kaptestRef) ref() *ObjectRef {
	if r.Kind == "" && r.Name == "" {
		return nil
	}
	o := &ObjectRef{Kind: r.Kind, Name: r.Name, Namespace: r.Namespace}
	if r.Version != "" {
		o.APIVersion = r.Version
		if r.Group != "" {
			o.APIVersion = r.Group + "/" + r.Version
		}
	}
	return o
}

// KaptestSuite reads a kaptest manifest as a suite: its policies (bound
// with `bindings: auto` where they hold no binding: kaptest needs none),
// its resources and CRDs, and a case per test of its vapTestSuites —
// admit: the request is admitted; deny: the policy denies it (its
// message holding deniedMessage); skip: the policy did not apply; error:
// the request is denied (an error under failurePolicy Fail) — and of its
// mapTestSuites — mutate: the policy applied and, with expectObject, the
// final object is that resource but for its name (the object's, unless
// disableNameOverwrite); admit; skip; error as for VAPs. A suite's binding
// names the binding the policy must have gone through. The objects are
// evaluated exactly as written (noDefaults), as kaptest does. A test with
// a param is bad input when no binding of the policy has a paramRef:
// params reach a policy through a binding's paramRef, which the suite must
// then hold.
func KaptestSuite(ctx context.Context, file string) (*Suite, error) {
	dir := filepath.Dir(file)
	var k kaptestFile
	if errs := readStrict(dir, filepath.Base(file), &k); len(errs) > 0 {
		return nil, &InputError{File: file, Errs: errs}
	}
	s := &Suite{
		APIVersion: APIVersion, Kind: Kind,
		Metadata: Metadata{Name: strings.TrimSuffix(filepath.Base(dir), ".test")},
		Policies: append(append([]string{}, k.Policies...), k.ValidatingAdmissionPolicies...),
		Bindings: BindingsAuto,
	}
	var errs field.ErrorList
	if k.Version != "" && k.Version != kaptestVersion {
		errs = append(errs, field.NotSupported(field.NewPath("version"), k.Version, []string{kaptestVersion}))
	}
	for _, r := range append(append([]string{}, k.CRDs...), k.Resources...) {
		s.Resources = append(s.Resources, Manifest{Path: r})
	}
	objects, err := manifest.Load(ctx, resolveAll(dir, k.Resources), nil)
	if err != nil {
		return nil, &InputError{File: file, Errs: field.ErrorList{fieldProblem(field.NewPath("resources"), err.Error())}}
	}
	paramBound := kaptestParamBound(ctx, dir, s.Policies)
	suites := []struct {
		name   string
		suites []kaptestPolicyT
	}{{"testSuites", k.TestSuites}, {"vapTestSuites", k.VAPTestSuites}, {"mapTestSuites", k.MAPTestSuites}}
	for _, group := range suites {
		vap := group.name != "mapTestSuites"
		for i, ts := range group.suites {
			for j, t := range ts.Tests {
				p := field.NewPath(group.name).Index(i).Child("tests").Index(j)
				c, cerrs := kaptestCaseOf(ts, t, j, vap, objects.Objects, paramBound[ts.Policy], p)
				if len(cerrs) > 0 {
					errs = append(errs, cerrs...)
					continue
				}
				s.Cases = append(s.Cases, c)
			}
		}
	}
	return finish(s, file, errs)
}

// kaptestParamBound tells, by policy name, whether a binding among the
// policy files (relative to dir) gives the policy a paramRef.
func kaptestParamBound(ctx context.Context, dir string, files []string) map[string]bool {
	out := map[string]bool{}
	set, err := manifest.Load(ctx, resolveAll(dir, files), nil)
	if err != nil {
		return out // load reports it
	}
	for _, b := range set.Bindings {
		if b.Binding.Spec.ParamRef != nil {
			out[b.Binding.Spec.PolicyName] = true
		}
	}
	_, vbs := set.ValidatingAPIObjects()
	for _, b := range vbs {
		if b.Spec.ParamRef != nil {
			out[b.Spec.PolicyName] = true
		}
	}
	return out
}

// kaptestCaseOf is the case of the j-th test t of the suite ts (of
// ValidatingAdmissionPolicies when vap), at p.
func kaptestCaseOf(ts kaptestPolicyT, t kaptestCase, j int, vap bool, objects []manifest.Object, paramBound bool, p *field.Path) (Case, field.ErrorList) {
	name := t.Object.Name
	if name == "" {
		name = t.OldObject.Name
	}
	c := Case{Name: fmt.Sprintf("%s #%d %s %s", ts.Policy, j+1, t.Expect, name), NoDefaults: true}
	c.ObjectRef, c.OldObjectRef = t.Object.ref(), t.OldObject.ref()
	if c.ObjectRef == nil && c.OldObjectRef != nil {
		// kaptest's DELETE: the old object alone.
		c.Operation = "DELETE"
	}
	if u := t.UserInfo; u != nil {
		c.User = &User{Name: u.Name, Groups: u.Groups, Extra: u.Extra}
	}
	kind := "MutatingAdmissionPolicy"
	if vap {
		kind = "ValidatingAdmissionPolicy"
	}
	if t.Param.ref() != nil && !paramBound {
		return c, field.ErrorList{fieldProblem(p.Child("param"), "params reach a "+kind+" through a binding's paramRef: add a "+kind+"Binding with paramRef {name: "+t.Param.Name+"} to the policies and write the test as a PolicyTest")}
	}
	applied := ts.Policy
	if ts.Binding != "" {
		applied += "/" + ts.Binding
	}
	supported := []string{"mutate", "admit", "skip", "error"}
	if vap {
		supported = []string{"admit", "deny", "skip", "error"}
	}
	switch t.Expect {
	case "mutate":
		if vap {
			break
		}
		c.Expect.Applied = []string{applied}
		if r := t.ExpectObject.ref(); r != nil {
			want, err := findRef(objects, r)
			if err != nil {
				return c, field.ErrorList{fieldProblem(p.Child("expectObject"), err.Error())}
			}
			if !t.DisableNameOverwrite {
				// The resources cannot hold two objects of one name: the
				// expected one has its own, the final object the test
				// object's.
				want.SetName(t.Object.Name)
			}
			c.Expect.Object = &Manifest{Inline: want.Object}
		}
		return c, nil
	case "admit":
		if vap && ts.Binding != "" {
			c.Expect.Applied = []string{applied}
		}
		return c, nil
	case "deny":
		if !vap {
			break
		}
		c.Expect.Denied = &Denial{By: "ValidatingAdmissionPolicy", Message: t.DeniedMessage}
		if ts.Binding != "" {
			c.Expect.Denied.Message = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", ts.Policy, ts.Binding, t.DeniedMessage)
		}
		return c, nil
	case "skip":
		c.Expect.NotApplied = []string{applied}
		return c, nil
	case "error":
		c.Expect.Denied = &Denial{}
		return c, nil
	}
	return c, field.ErrorList{field.NotSupported(p.Child("expect"), t.Expect, supported)}
}

// loadKaptest loads a kaptest manifest as a suite.
func loadKaptest(ctx context.Context, file string, policies []string, co clusterOptions) (*Loaded, error) {
	s, err := KaptestSuite(ctx, file)
	if err != nil {
		return nil, err
	}
	return load(ctx, file, s, policies, co)
}
