package policytest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/manifest"
)

// The Kyverno CLI's test files (`kyverno test`, kyverno-test.yaml: kind
// Test of kyverno.io/v1, v1alpha1 or cli.kyverno.io/v1alpha1) test
// native MutatingAdmissionPolicies with results marked
// isMutatingAdmissionPolicy. mutatis reads such a file as a suite
// (KyvernoSuite) and runs those results as Kyverno does: every named
// resource (or every resource of the result's kind) admitted through the
// policies, the objects exactly as written (noDefaults), the patched
// resource compared whole.

// KyvernoTestFile is the name `kyverno test` looks for.
const KyvernoTestFile = "kyverno-test.yaml"

// IsKyvernoTestFile tells whether file is a Kyverno CLI test file with
// results for MutatingAdmissionPolicies or ValidatingAdmissionPolicies.
func IsKyvernoTestFile(file string) bool {
	if b := filepath.Base(file); b != KyvernoTestFile && b != "kyverno-test.yml" {
		return false
	}
	return fileContains(file, "isMutatingAdmissionPolicy: true") || fileContains(file, "isValidatingAdmissionPolicy: true")
}

// markerBytes bounds how much of a file discovery reads to tell whose
// format it is.
const markerBytes = 4 << 20

// fileContains tells whether the regular file (or link to one) file holds
// marker in its first markerBytes. Anything else — a named pipe, a device
// — is not read: discovery must not block.
func fileContains(file, marker string) bool {
	info, err := os.Stat(file)
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, markerBytes))
	return err == nil && bytes.Contains(data, []byte(marker))
}

// kyvernoHeader is what every Kyverno CLI file starts with: accepted,
// not read.
type kyvernoHeader struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
}

type kyvernoTest struct {
	kyvernoHeader
	Policies       []string        `json:"policies"`
	Resources      []string        `json:"resources"`
	ParamResources []string        `json:"paramResources"`
	Variables      string          `json:"variables"`
	UserInfo       string          `json:"userinfo"`
	Results        []kyvernoResult `json:"results"`
	// Kyverno's own policies' fields, which results for
	// MutatingAdmissionPolicies do not use.
	Exceptions      []string `json:"exceptions"`
	TargetResources []string `json:"targetResources"`
	Context         string   `json:"context"`
}

type kyvernoResult struct {
	IsMutatingAdmissionPolicy   bool     `json:"isMutatingAdmissionPolicy"`
	IsValidatingAdmissionPolicy bool     `json:"isValidatingAdmissionPolicy"`
	IsValidatingPolicy          bool     `json:"isValidatingPolicy"`
	IsMutatingPolicy            bool     `json:"isMutatingPolicy"`
	Policy                      string   `json:"policy"`
	Rule                        string   `json:"rule"`
	Kind                        string   `json:"kind"`
	Namespace                   string   `json:"namespace"`
	Resource                    string   `json:"resource"`
	Resources                   []string `json:"resources"`
	PatchedResources            string   `json:"patchedResources"`
	PatchedResource             string   `json:"patchedResource"`
	GeneratedResource           string   `json:"generatedResource"`
	CloneSourceResource         string   `json:"cloneSourceResource"`
	Result                      string   `json:"result"`
	Status                      string   `json:"status"`
}

type kyvernoValues struct {
	kyvernoHeader
	NamespaceSelector []kyvernoNamespaceSelector `json:"namespaceSelector"`
	Policies          []any                      `json:"policies"`
	GlobalVals        any                        `json:"globalValues"`
	Subresources      []any                      `json:"subresources"`
	Namespaces        []map[string]any           `json:"namespaces"`
}

// kyvernoNamespaceSelector gives the namespace of a name its labels.
type kyvernoNamespaceSelector struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

type kyvernoUserInfo struct {
	kyvernoHeader
	UserInfo struct {
		Username string              `json:"username"`
		UID      string              `json:"uid"`
		Groups   []string            `json:"groups"`
		Extra    map[string][]string `json:"extra"`
	} `json:"userInfo"`
	ClusterRoles []string `json:"clusterRoles"`
	Roles        []string `json:"roles"`
}

// readStrict reads the YAML file p (relative to dir) into v, reporting
// unknown fields with the closest known one.
func readStrict(dir, p string, v any) field.ErrorList {
	data, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		return field.ErrorList{fieldProblem(field.NewPath(p), err.Error())}
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return field.ErrorList{fieldProblem(field.NewPath(p), err.Error())}
	}
	strict, err := sigsjson.UnmarshalStrict(js, v)
	if err != nil {
		return field.ErrorList{fieldProblem(field.NewPath(p), jsonErrorIn(js, err).Error())}
	}
	var errs field.ErrorList
	for _, e := range strict {
		fe := unknownField(e)
		if m := unknownFieldError.FindStringSubmatch(e.Error()); m != nil {
			fe = unknownFieldAt(m[1], reflect.TypeOf(v))
		}
		fe.Field = p + ": " + fe.Field
		errs = append(errs, fe)
	}
	return errs
}

// KyvernoSuite reads a Kyverno CLI test file as a suite: its policies
// (bound with `bindings: auto` where they hold no binding), its resources
// and paramResources as the cluster's objects, the namespaces of its
// variables' namespaces and the namespaces of its namespaceSelector with
// their labels, its userinfo as the requesting user, and a case per
// resource of every result marked isMutatingAdmissionPolicy or
// isValidatingAdmissionPolicy — pass with patchedResources: the final
// object is the patched resource of the same kind and name; pass without:
// the policy applied (and the request was admitted); skip: it did not
// apply; error: the request is denied (an error under failurePolicy
// Fail); fail, for a ValidatingAdmissionPolicy: a validation failed, seen
// as its bindings' actions make kube-apiserver show it (kyvernoFailure).
// Other results are left out; a result mutatis cannot check (fail of a
// MutatingAdmissionPolicy) is bad input naming it.
func KyvernoSuite(ctx context.Context, file string) (*Suite, error) {
	dir := filepath.Dir(file)
	var t kyvernoTest
	errs := readStrict(dir, filepath.Base(file), &t)
	if len(errs) > 0 {
		return nil, &InputError{File: file, Errs: errs}
	}
	s := &Suite{
		APIVersion: APIVersion, Kind: Kind,
		Policies: t.Policies,
		Bindings: BindingsAuto,
	}
	// Kyverno's tests are mostly named "test": the directory names the
	// suite, as it names the file.
	s.Metadata.Name = filepath.Base(dir)
	for _, r := range append(append([]string{}, t.Resources...), t.ParamResources...) {
		s.Resources = append(s.Resources, Manifest{Path: r})
	}
	if t.Variables != "" {
		var v kyvernoValues
		errs = append(errs, readStrict(dir, t.Variables, &v)...)
		s.Resources = append(s.Resources, kyvernoNamespaces(v)...)
	}
	var user *User
	if t.UserInfo != "" {
		var u kyvernoUserInfo
		errs = append(errs, readStrict(dir, t.UserInfo, &u)...)
		user = &User{Name: u.UserInfo.Username, UID: u.UserInfo.UID, Groups: u.UserInfo.Groups, Extra: u.UserInfo.Extra}
	}
	objects, err := manifest.Load(ctx, resolveAll(dir, t.Resources), nil)
	if err != nil {
		return nil, &InputError{File: file, Errs: field.ErrorList{fieldProblem(field.NewPath("resources"), err.Error())}}
	}
	var bindings []manifest.ValidatingBinding
	for _, r := range t.Results {
		if r.IsValidatingAdmissionPolicy {
			set, err := manifest.Load(ctx, resolveAll(dir, t.Policies), nil)
			if err != nil {
				return nil, &InputError{File: file, Errs: field.ErrorList{fieldProblem(field.NewPath("policies"), err.Error())}}
			}
			bindings = set.ValidatingBindings
			break
		}
	}
	for i, r := range t.Results {
		if !r.IsMutatingAdmissionPolicy && !r.IsValidatingAdmissionPolicy {
			continue
		}
		p := field.NewPath("results").Index(i)
		var fail func() Expect
		if r.IsValidatingAdmissionPolicy {
			fail = func() Expect { return kyvernoFailure(r.Policy, bindings) }
		}
		cs, rerrs := kyvernoCases(ctx, dir, p, r, objects.Objects, user, fail)
		errs = append(errs, rerrs...)
		s.Cases = append(s.Cases, cs...)
	}
	return finish(s, file, errs)
}

func resolveAll(dir string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = resolve(dir, p)
	}
	return out
}

// kyvernoNamespaces are the namespaces of a values file: its namespaces
// as written, and those of its namespaceSelector with their labels (added
// to the namespace of that name if there is one).
func kyvernoNamespaces(v kyvernoValues) []Manifest {
	var out []Manifest
	byName := map[string]map[string]any{}
	for _, ns := range v.Namespaces {
		o := map[string]any{"apiVersion": "v1", "kind": "Namespace"}
		for k, val := range ns {
			o[k] = val
		}
		if md, ok := o["metadata"].(map[string]any); ok {
			if name, ok := md["name"].(string); ok {
				byName[name] = md
			}
		}
		out = append(out, Manifest{Inline: o})
	}
	for _, ns := range v.NamespaceSelector {
		md := byName[ns.Name]
		if md == nil {
			md = map[string]any{"name": ns.Name}
			out = append(out, Manifest{Inline: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": md}})
		}
		labels, _ := md["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			md["labels"] = labels
		}
		for k, val := range ns.Labels {
			labels[k] = val
		}
	}
	return out
}

// kyvernoFailure is what Kyverno's fail of the ValidatingAdmissionPolicy
// policy (a validation evaluated to false) is in kube-apiserver, by the
// validationActions of the policy's bindings among bindings: a refusal by
// ValidatingAdmissionPolicy if one of them denies or none binds the
// policy (`bindings: auto` binds it with Deny, as Kyverno evaluates an
// unbound policy); else the warning of a Warn binding, or the
// validation failure an Audit binding records.
func kyvernoFailure(policy string, bindings []manifest.ValidatingBinding) Expect {
	actions := map[admissionregistrationv1.ValidationAction]bool{}
	bound := false
	for _, b := range bindings {
		if b.Binding.Spec.PolicyName != policy {
			continue
		}
		bound = true
		for _, a := range b.Binding.Spec.ValidationActions {
			actions[a] = true
		}
	}
	var e Expect
	switch {
	case !bound || actions[admissionregistrationv1.Deny]:
		e.Denied = &Denial{By: "ValidatingAdmissionPolicy"}
	case actions[admissionregistrationv1.Warn]:
		e.Warnings = []string{"^Validation failed for ValidatingAdmissionPolicy '" + regexp.QuoteMeta(policy) + "' with binding '[^']*': "}
	case actions[admissionregistrationv1.Audit]:
		e.ValidationFailures = []ValidationFailure{{Policy: policy}}
	default:
		// A binding without actions, which kube-apiserver refuses: the
		// suite's load reports it.
		e.Denied = &Denial{By: "ValidatingAdmissionPolicy"}
	}
	return e
}

// kyvernoCases are the cases of one result: one per resource it names
// (or per resource of its kind). fail makes what a fail result expects
// (nil: fail is not checked).
func kyvernoCases(ctx context.Context, dir string, p *field.Path, r kyvernoResult, objects []manifest.Object, user *User, fail func() Expect) ([]Case, field.ErrorList) {
	names := r.Resources
	if r.Resource != "" {
		names = append([]string{r.Resource}, names...)
	}
	if len(names) == 0 {
		for _, o := range objects {
			if o.Object.GetKind() == r.Kind {
				names = append(names, o.Object.GetName())
			}
		}
	}
	if len(names) == 0 {
		return nil, field.ErrorList{fieldProblem(p, fmt.Sprintf("no %s among the resources", r.Kind))}
	}
	result := r.Result
	if result == "" {
		result = r.Status
	}
	var patched []manifest.Object
	if r.PatchedResources != "" {
		set, err := manifest.Load(ctx, []string{resolve(dir, r.PatchedResources)}, nil)
		if err != nil {
			return nil, field.ErrorList{fieldProblem(p.Child("patchedResources"), err.Error())}
		}
		patched = set.Objects
	}
	var cases []Case
	var errs field.ErrorList
	for _, name := range names {
		c := Case{
			Name:       fmt.Sprintf("%s %s %s/%s", r.Policy, result, r.Kind, name),
			NoDefaults: true,
			Namespace:  r.Namespace,
			User:       user,
			ObjectRef:  &ObjectRef{Kind: r.Kind, Name: name},
		}
		switch result {
		case "pass":
			if r.PatchedResources == "" {
				c.Expect.Applied = []string{r.Policy}
				break
			}
			want := findObject(patched, r.Kind, name)
			if want == nil {
				errs = append(errs, fieldProblem(p.Child("patchedResources"), fmt.Sprintf("%s: no %s %s", r.PatchedResources, r.Kind, name)))
				continue
			}
			c.Expect.Object = &Manifest{Inline: want}
		case "skip":
			c.Expect.NotApplied = []string{r.Policy}
		case "error":
			c.Expect.Denied = &Denial{}
		case "fail":
			if fail == nil {
				errs = append(errs, fieldProblem(p.Child("result"), fmt.Sprintf("%q: mutatis checks pass, skip and error of a MutatingAdmissionPolicy (a failing mutation is a result to fix, not to expect)", result)))
				continue
			}
			c.Expect = fail()
			c.Expect.Applied = []string{r.Policy}
		default:
			errs = append(errs, fieldProblem(p.Child("result"), fmt.Sprintf("%q: mutatis checks pass, skip, error and, of a ValidatingAdmissionPolicy, fail", result)))
			continue
		}
		cases = append(cases, c)
	}
	return cases, errs
}

// findObject is the object of kind and name among objs.
func findObject(objs []manifest.Object, kind, name string) map[string]any {
	for _, o := range objs {
		if o.Object.GetKind() == kind && o.Object.GetName() == name {
			return o.Object.DeepCopy().Object
		}
	}
	return nil
}

// loadKyverno loads a Kyverno CLI test file as a suite.
func loadKyverno(ctx context.Context, file string, policies []string, co clusterOptions) (*Loaded, error) {
	s, err := KyvernoSuite(ctx, file)
	if err != nil {
		return nil, err
	}
	return load(ctx, file, s, policies, co)
}
