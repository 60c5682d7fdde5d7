package policytest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mutatis-dev/mutatis/manifest"
)

// kat (github.com/zemanlx/kat) keeps the tests of the policies of a
// directory in its tests/ subdirectory, one file per part of a case, named
// <policy>.<test>[.<expect>].<part>.yaml: object, oldObject, request
// (operation, user, namespace, namespaceObject …), params, gold (the
// expected object) and message.txt (the expected denial). mutatis reads
// such a directory as a suite (KatSuite) and runs it as kat does: the
// objects exactly as written (noDefaults), every test file a case.

// katTestsDir is the name of the directory of kat's tests.
const katTestsDir = "tests"

// katParts are the suffixes of kat's test files, the part of the case
// each holds.
var katParts = []string{".object.yaml", ".oldObject.yaml", ".request.yaml", ".params.yaml", ".gold.yaml", ".message.txt", ".warnings.txt", ".annotations.yaml", ".authorizer.yaml"}

// katPart splits a kat test file's name into the case's base name and its
// part; ok is false for other files.
func katPart(name string) (base, part string, ok bool) {
	for _, p := range katParts {
		if b, found := strings.CutSuffix(name, p); found && b != "" {
			return b, p, true
		}
	}
	return "", "", false
}

// isKatPolicyFile tells whether a file holds the policies of a kat
// directory (kat's names: policy.yaml, policies.yaml, binding.yaml,
// bindings.yaml, *.policy.yaml, *.binding.yaml, and .yml).
func isKatPolicyFile(name string) bool {
	base, ok := strings.CutSuffix(name, ".yaml")
	if !ok {
		base, ok = strings.CutSuffix(name, ".yml")
	}
	if !ok {
		return false
	}
	switch base {
	case "policy", "policies", "binding", "bindings":
		return true
	}
	return strings.HasSuffix(base, ".policy") || strings.HasSuffix(base, ".binding")
}

// katPolicyFiles are the policy files of dir, sorted.
func katPolicyFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && isKatPolicyFile(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// IsKatTestsDir tells whether dir is the tests/ directory of kat's
// convention whose parent holds MutatingAdmissionPolicies: a directory
// named tests with kat test files, beside policy files that name the
// kind.
func IsKatTestsDir(dir string) bool {
	if filepath.Base(dir) != katTestsDir {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil || !slices.ContainsFunc(entries, func(e os.DirEntry) bool {
		_, _, ok := katPart(e.Name())
		return ok && !e.IsDir()
	}) {
		return false
	}
	parent := filepath.Dir(dir)
	for _, f := range katPolicyFiles(parent) {
		if fileContains(filepath.Join(parent, f), "kind: MutatingAdmissionPolicy") {
			return true
		}
	}
	return false
}

// katRequest is kat's request file.
type katRequest struct {
	Operation       string         `json:"operation,omitempty"`
	SubResource     string         `json:"subResource,omitempty"`
	Name            string         `json:"name,omitempty"`
	Namespace       string         `json:"namespace,omitempty"`
	NamespaceObject map[string]any `json:"namespaceObject,omitempty"`
	UserInfo        *struct {
		Username string              `json:"username,omitempty"`
		UID      string              `json:"uid,omitempty"`
		Groups   []string            `json:"groups,omitempty"`
		Extra    map[string][]string `json:"extra,omitempty"`
	} `json:"userInfo,omitempty"`
	DryRun    bool           `json:"dryRun,omitempty"`
	UID       string         `json:"uid,omitempty"`
	Object    map[string]any `json:"object,omitempty"`
	OldObject map[string]any `json:"oldObject,omitempty"`
	Options   map[string]any `json:"options,omitempty"`
}

// KatSuite reads a kat tests/ directory (IsKatTestsDir) as a suite: the
// policies of its parent directory (bound with `bindings: auto` where
// kat's files bind none), a case per test, named by its file names'
// <policy>.<test>[.<expect>] part. Tests of the parent's
// ValidatingAdmissionPolicies are left out: mutatis evaluates mutating
// policies only. Paths in the suite are relative to the parent directory.
func KatSuite(ctx context.Context, dir string) (*Suite, error) {
	parent := filepath.Dir(dir)
	s := &Suite{
		APIVersion: APIVersion, Kind: Kind,
		Metadata: Metadata{Name: filepath.Base(parent)},
		Policies: katPolicyFiles(parent),
		Bindings: BindingsAuto,
	}
	validating := katValidatingPolicies(ctx, parent, s.Policies)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &InputError{File: dir, Err: err}
	}
	parts := map[string]map[string]string{}
	for _, e := range entries {
		base, part, ok := katPart(e.Name())
		if !ok {
			continue
		}
		if info, err := os.Stat(filepath.Join(dir, e.Name())); err != nil || !info.Mode().IsRegular() {
			continue // a pipe or a device is never read
		}
		if parts[base] == nil {
			parts[base] = map[string]string{}
		}
		parts[base][part] = filepath.Join(katTestsDir, e.Name())
	}
	bases := make([]string, 0, len(parts))
	for b := range parts {
		if !slices.ContainsFunc(validating, func(v string) bool { return strings.HasPrefix(b, v+".") }) {
			bases = append(bases, b)
		}
	}
	sort.Strings(bases)
	var errs field.ErrorList
	for _, base := range bases {
		c, cerrs := katCase(parent, base, parts[base])
		errs = append(errs, cerrs...)
		s.Cases = append(s.Cases, c)
	}
	return finish(s, dir, errs)
}

// katValidatingPolicies are the names of the ValidatingAdmissionPolicies
// among the policy files of dir.
func katValidatingPolicies(ctx context.Context, dir string, files []string) []string {
	var names []string
	for _, f := range files {
		set, _ := manifest.Load(ctx, []string{filepath.Join(dir, f)}, nil)
		if set == nil {
			continue
		}
		for _, p := range set.ValidatingPolicies {
			names = append(names, p.Policy.Name)
		}
	}
	return names
}

// katCase is the case of one kat test: its files by part, relative to
// the suite's directory dir.
func katCase(dir, base string, files map[string]string) (Case, field.ErrorList) {
	c := Case{Name: base, NoDefaults: true}
	var errs field.ErrorList
	at := func(part string) *field.Path { return field.NewPath(files[part]) }
	for _, part := range []string{".warnings.txt", ".annotations.yaml"} {
		if files[part] != "" {
			errs = append(errs, fieldProblem(at(part), "warnings and audit annotations are what ValidatingAdmissionPolicies give; a mutating policy has none"))
		}
	}
	if files[".authorizer.yaml"] != "" {
		errs = append(errs, fieldProblem(at(".authorizer.yaml"), "kat's authorizer mocks are not read: give Roles and RoleBindings (or ClusterRoles) as resources of a PolicyTest, which back the CEL authorizer"))
	}
	if p := files[".object.yaml"]; p != "" {
		c.Object = &Manifest{Path: p}
	}
	if p := files[".oldObject.yaml"]; p != "" {
		c.OldObject = &Manifest{Path: p}
	}
	if p := files[".params.yaml"]; p != "" {
		c.Resources = append(c.Resources, Manifest{Path: p})
	}
	if p := files[".request.yaml"]; p != "" {
		errs = append(errs, katApplyRequest(&c, dir, p)...)
	}
	if c.Operation == "" {
		switch {
		case c.Object != nil && c.OldObject != nil:
			c.Operation = "UPDATE"
		case c.Object == nil && c.OldObject != nil:
			c.Operation = "DELETE"
		}
	}
	if c.Operation == "DELETE" {
		errs = append(errs, fieldProblem(field.NewPath(base), "a DELETE: MutatingAdmissionPolicies are never called for it (kube-apiserver's API validation refuses the operation in their rules)"))
	}
	if strings.Contains(base+".", ".deny.") {
		d := &Denial{}
		if p := files[".message.txt"]; p != "" {
			data, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				errs = append(errs, fieldProblem(field.NewPath(p), err.Error()))
			}
			d.Message = strings.TrimSpace(string(data))
		}
		c.Expect.Denied = d
	} else if p := files[".gold.yaml"]; p != "" {
		c.Expect.Object = &Manifest{Path: p}
	}
	return c, errs
}

// katApplyRequest sets what kat's request file p gives to the case.
func katApplyRequest(c *Case, dir, p string) field.ErrorList {
	var r katRequest
	errs := readStrict(dir, p, &r)
	if len(errs) > 0 {
		return errs
	}
	c.Operation, c.Subresource, c.DryRun = strings.ToUpper(r.Operation), r.SubResource, r.DryRun
	c.Namespace = r.Namespace
	if r.NamespaceObject != nil {
		ns := r.NamespaceObject
		meta, _ := ns["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			ns["metadata"] = meta
		}
		if ns["apiVersion"] == nil {
			ns["apiVersion"], ns["kind"] = "v1", "Namespace"
		}
		name, _ := meta["name"].(string)
		switch {
		case name == "" && c.Namespace != "":
			meta["name"] = c.Namespace
		case c.Namespace == "":
			c.Namespace = name
		}
		c.Resources = append(c.Resources, Manifest{Inline: ns})
	}
	if u := r.UserInfo; u != nil {
		c.User = &User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	if r.Object != nil && c.Object == nil {
		c.Object = &Manifest{Inline: r.Object}
	}
	if r.OldObject != nil && c.OldObject == nil {
		c.OldObject = &Manifest{Inline: r.OldObject}
	}
	if c.Operation == "CONNECT" && c.Object == nil {
		errs = append(errs, fieldProblem(field.NewPath(p), "a CONNECT without an object (its options): give the object under admission, e.g. a PodExecOptions, in the request's object"))
	}
	return errs
}

// loadKat loads a kat tests/ directory as a suite.
func loadKat(ctx context.Context, dir string, policies []string, co clusterOptions) (*Loaded, error) {
	s, err := KatSuite(ctx, dir)
	if err != nil {
		return nil, err
	}
	if len(s.Policies) == 0 {
		s.Policies = nil
	}
	// Paths are relative to the parent directory, the directory of dir:
	// load resolves them against the directory of the file it is given.
	l, err := load(ctx, dir, s, policies, co)
	if err != nil {
		return nil, err
	}
	if files, ferr := os.ReadDir(dir); ferr == nil {
		for _, f := range files {
			l.Files = append(l.Files, filepath.Join(dir, f.Name()))
		}
	}
	return l, nil
}
