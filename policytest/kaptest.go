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
// as files, and, since kaptest tests MutatingAdmissionPolicies,
// mapTestSuites: per policy, tests naming an object (and an old object)
// among the resources by kind and name, and what must come of it — mutate
// (and expectObject, the resource the object must become), admit, skip or
// error. mutatis reads such a file as a suite (KaptestSuite).

// KaptestFile is the name `kaptest init` gives a test manifest.
const KaptestFile = "kaptest.yaml"

// IsKaptestFile tells whether file is a kaptest manifest with tests of
// MutatingAdmissionPolicies.
func IsKaptestFile(file string) bool {
	if b := filepath.Base(file); b != KaptestFile && b != "kaptest.yml" {
		return false
	}
	return fileContains(file, "mapTestSuites:")
}

type kaptestFile struct {
	Policies []string `json:"policies"`
	// ValidatingAdmissionPolicies is the older name of Policies.
	ValidatingAdmissionPolicies []string         `json:"validatingAdmissionPolicies"`
	Resources                   []string         `json:"resources"`
	SchemaLocations             []string         `json:"schemaLocations"`
	TestSuites                  []any            `json:"testSuites"`
	VAPTestSuites               []any            `json:"vapTestSuites"`
	MAPTestSuites               []kaptestPolicyT `json:"mapTestSuites"`
}

type kaptestPolicyT struct {
	Policy string        `json:"policy"`
	Tests  []kaptestCase `json:"tests"`
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
	UserInfo     *struct {
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
// its resources, and a case per test of its mapTestSuites — mutate: the
// policy applied and, with expectObject, the final object is that
// resource but for its name (the object's); admit: the request is admitted; skip: the policy did not
// apply; error: the request is denied (an error under failurePolicy
// Fail). The objects are evaluated exactly as written (noDefaults), as
// kaptest does. A test with a param is bad input: params reach a policy
// through a binding's paramRef, which the suite must then hold.
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
	for _, r := range k.Resources {
		s.Resources = append(s.Resources, Manifest{Path: r})
	}
	objects, err := manifest.Load(ctx, resolveAll(dir, k.Resources), nil)
	if err != nil {
		return nil, &InputError{File: file, Errs: field.ErrorList{fieldProblem(field.NewPath("resources"), err.Error())}}
	}
	var errs field.ErrorList
	for i, ts := range k.MAPTestSuites {
		for j, t := range ts.Tests {
			p := field.NewPath("mapTestSuites").Index(i).Child("tests").Index(j)
			c := Case{Name: fmt.Sprintf("%s #%d %s %s", ts.Policy, j+1, t.Expect, t.Object.Name), NoDefaults: true}
			c.ObjectRef, c.OldObjectRef = t.Object.ref(), t.OldObject.ref()
			if u := t.UserInfo; u != nil {
				c.User = &User{Name: u.Name, Groups: u.Groups, Extra: u.Extra}
			}
			if t.Param.ref() != nil {
				errs = append(errs, fieldProblem(p.Child("param"), "params reach a MutatingAdmissionPolicy through a binding's paramRef: add a MutatingAdmissionPolicyBinding with paramRef {name: "+t.Param.Name+"} to the policies and write the test as a PolicyTest"))
				continue
			}
			switch t.Expect {
			case "mutate":
				c.Expect.Applied = []string{ts.Policy}
				if r := t.ExpectObject.ref(); r != nil {
					want, err := findRef(objects.Objects, r)
					if err != nil {
						errs = append(errs, fieldProblem(p.Child("expectObject"), err.Error()))
						continue
					}
					// The resources cannot hold two objects of one name:
					// the expected one has its own, the final object the
					// test object's.
					want.SetName(t.Object.Name)
					c.Expect.Object = &Manifest{Inline: want.Object}
				}
			case "admit":
			case "skip":
				c.Expect.NotApplied = []string{ts.Policy}
			case "error":
				c.Expect.Denied = &Denial{}
			default:
				errs = append(errs, field.NotSupported(p.Child("expect"), t.Expect, []string{"mutate", "admit", "skip", "error"}))
				continue
			}
			s.Cases = append(s.Cases, c)
		}
	}
	return finish(s, file, errs)
}

// loadKaptest loads a kaptest manifest as a suite.
func loadKaptest(ctx context.Context, file string, policies []string, co clusterOptions) (*Loaded, error) {
	s, err := KaptestSuite(ctx, file)
	if err != nil {
		return nil, err
	}
	return load(ctx, file, s, policies, co)
}
