package policytest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mutatis-dev/mutatis/manifest"
)

// kat (github.com/zemanlx/kat) keeps the tests of the policies of a
// directory in its tests/ subdirectory, one file per part of a case, named
// <policy>.<test>[.<expect>].<part>.yaml: object, oldObject, request
// (operation, user, namespace, namespaceObject, options …), params, gold
// (the expected object), message.txt (the expected denial), warnings.txt
// (the expected warnings, one a line), annotations.yaml (the expected
// audit annotations) and authorizer.yaml (the authorizer's decisions).
// <expect> is allow, deny, warn or audit. mutatis reads such a directory
// as a suite (KatSuite) and runs it as kat does: the objects exactly as
// written (noDefaults), every test file a case; what kat's texts leave
// out of kube-apiserver's (the policy and binding of a denial or a
// warning, the policy of an audit annotation's key) is matched around
// them.

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
// convention whose parent holds MutatingAdmissionPolicies or
// ValidatingAdmissionPolicies: a directory named tests with kat test
// files, beside policy files that name either kind.
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
		if file := filepath.Join(parent, f); fileContains(file, "kind: MutatingAdmissionPolicy") || fileContains(file, "kind: ValidatingAdmissionPolicy") {
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
	DryRun bool   `json:"dryRun,omitempty"`
	UID    string `json:"uid,omitempty"`
	// The fields of an AdmissionRequest that kat reads and ignores (it
	// derives them from the objects).
	APIVersion         string         `json:"apiVersion,omitempty"`
	Kind               any            `json:"kind,omitempty"`
	Resource           any            `json:"resource,omitempty"`
	RequestKind        any            `json:"requestKind,omitempty"`
	RequestResource    any            `json:"requestResource,omitempty"`
	RequestSubResource string         `json:"requestSubResource,omitempty"`
	Object             map[string]any `json:"object,omitempty"`
	OldObject          map[string]any `json:"oldObject,omitempty"`
	Options            map[string]any `json:"options,omitempty"`
}

// KatSuite reads a kat tests/ directory (IsKatTestsDir) as a suite: the
// policies of its parent directory (bound with `bindings: auto` where
// kat's files bind none), a case per test, named by its file names'
// <policy>.<test>[.<expect>] part; the test's policy is the one whose
// name prefixes it, or the only one. Paths in the suite are relative to
// the parent directory.
//
// A deny test expects a denial whose message holds message.txt (kat's
// message is the validation's, kube-apiserver's says which policy and
// binding denied the request before it); a warn test, warnings that end
// in each line of warnings.txt after kube-apiserver's "Validation failed
// for ValidatingAdmissionPolicy 'POLICY' with binding 'BINDING': "; an
// audit test, the audit annotations of annotations.yaml, whose keys kat
// writes without the "POLICY/" kube-apiserver gives them; allow (or no
// expectation) an admission. An authorizer.yaml's allow decisions become
// RBAC rules of the test's user (kat's deny is RBAC's default).
func KatSuite(ctx context.Context, dir string) (*Suite, error) {
	parent := filepath.Dir(dir)
	s := &Suite{
		APIVersion: APIVersion, Kind: Kind,
		Metadata: Metadata{Name: filepath.Base(parent)},
		Policies: katPolicyFiles(parent),
		Bindings: BindingsAuto,
	}
	policies := katPolicyNames(ctx, parent, s.Policies)
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
		bases = append(bases, b)
	}
	sort.Strings(bases)
	var errs field.ErrorList
	for _, base := range bases {
		c, cerrs := katCase(parent, base, katPolicyOf(base, policies), parts[base])
		errs = append(errs, cerrs...)
		s.Cases = append(s.Cases, c)
	}
	return finish(s, dir, errs)
}

// katPolicyNames are the names of the policies (mutating and validating)
// among the policy files of dir.
func katPolicyNames(ctx context.Context, dir string, files []string) []string {
	var names []string
	for _, f := range files {
		set, _ := manifest.Load(ctx, []string{filepath.Join(dir, f)}, nil)
		if set == nil {
			continue
		}
		for _, p := range set.Policies {
			names = append(names, p.Policy.Name)
		}
		for _, p := range set.ValidatingPolicies {
			names = append(names, p.Policy.Name)
		}
	}
	return names
}

// katPolicyOf is the policy a kat test named base tests, as kat finds it:
// the policy whose name and a dot start base, or the only policy; "" when
// neither.
func katPolicyOf(base string, policies []string) string {
	for _, p := range policies {
		if strings.HasPrefix(base, p+".") {
			return p
		}
	}
	if len(policies) == 1 {
		return policies[0]
	}
	return ""
}

// katExpect is the expectation a kat test's name gives: "deny", "warn",
// "audit", or "allow" (also for a name without one, kat's default).
func katExpect(base string) string {
	for _, e := range []string{"deny", "warn", "audit"} {
		if strings.Contains(base+".", "."+e+".") {
			return e
		}
	}
	return "allow"
}

// katCase is the case of one kat test of policy (the test's policy, ""
// when unknown): its files by part, relative to the suite's directory
// dir.
func katCase(dir, base, policy string, files map[string]string) (Case, field.ErrorList) {
	c := Case{Name: base, NoDefaults: true}
	var errs field.ErrorList
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
	if p := files[".authorizer.yaml"]; p != "" {
		errs = append(errs, katAuthorizer(&c, dir, p)...)
	}
	read := func(part string) string {
		p := files[part]
		if p == "" {
			return ""
		}
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			errs = append(errs, fieldProblem(field.NewPath(p), err.Error()))
		}
		return string(data)
	}
	if katExpect(base) == "deny" {
		c.Expect.Denied = &Denial{Message: strings.TrimSpace(read(".message.txt"))}
	} else if p := files[".gold.yaml"]; p != "" {
		c.Expect.Object = &Manifest{Path: p}
	}
	quotedPolicy := `[^']*`
	if policy != "" {
		quotedPolicy = regexp.QuoteMeta(policy)
	}
	for _, line := range strings.Split(read(".warnings.txt"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			c.Expect.Warnings = append(c.Expect.Warnings, "^Validation failed for ValidatingAdmissionPolicy '"+quotedPolicy+"' with binding '[^']*': "+regexp.QuoteMeta(line)+"$")
		}
	}
	if p := files[".annotations.yaml"]; p != "" {
		var annotations map[string]string
		if aerrs := readStrict(dir, p, &annotations); len(aerrs) > 0 {
			errs = append(errs, aerrs...)
		}
		for k, v := range annotations {
			if policy != "" && !strings.Contains(k, "/") {
				k = policy + "/" + k
			}
			if c.Expect.AuditAnnotations == nil {
				c.Expect.AuditAnnotations = map[string]string{}
			}
			c.Expect.AuditAnnotations[k] = v
		}
	}
	return c, errs
}

// katAuthorization is one decision of kat's authorizer.yaml.
type katAuthorization struct {
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Verb        string `json:"verb"`
	Decision    string `json:"decision"`
}

// katAuthorizer gives the case the RBAC objects that make kube-apiserver's
// authorizer decide as kat's authorizer file p does for the case's user:
// a Role and RoleBinding per allowed namespaced check, a ClusterRole and
// ClusterRoleBinding per allowed cluster-wide one. kat's deny, and what
// the file does not name, is RBAC's answer without a rule.
func katAuthorizer(c *Case, dir, p string) field.ErrorList {
	var decisions []katAuthorization
	if errs := readStrict(dir, p, &decisions); len(errs) > 0 {
		return errs
	}
	if c.User == nil || c.User.Name == "" {
		return field.ErrorList{fieldProblem(field.NewPath(p), "the authorizer's decisions are those of the request's user: give its userInfo in the test's request file (mutatis' default user is in system:masters, whom every check allows)")}
	}
	var errs field.ErrorList
	for i, d := range decisions {
		switch d.Decision {
		case "deny":
			continue
		case "allow":
		default:
			errs = append(errs, field.NotSupported(field.NewPath(p).Index(i).Child("decision"), d.Decision, []string{"allow", "deny"}))
			continue
		}
		resource := d.Resource
		if d.Subresource != "" {
			resource += "/" + d.Subresource
		}
		name := fmt.Sprintf("kat-authorizer-%d", i)
		rule := map[string]any{"apiGroups": []any{d.Group}, "resources": []any{resource}, "verbs": []any{d.Verb}}
		subject := map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": c.User.Name}
		role, binding := "ClusterRole", "ClusterRoleBinding"
		meta := map[string]any{"name": name}
		if d.Namespace != "" {
			role, binding = "Role", "RoleBinding"
			meta["namespace"] = d.Namespace
		}
		c.Resources = append(c.Resources,
			Manifest{Inline: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": role, "metadata": meta, "rules": []any{rule}}},
			Manifest{Inline: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding, "metadata": maps.Clone(meta),
				"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": name}, "subjects": []any{subject}}})
	}
	return errs
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
		if opts := katConnectOptions(c.Subresource, r); opts != nil {
			// kube-apiserver's CONNECT admits the options object.
			c.Object = &Manifest{Inline: opts}
		} else {
			errs = append(errs, fieldProblem(field.NewPath(p), "a CONNECT without an object (its options): give the object under admission, e.g. a PodExecOptions, in the request's object, or pods' exec, attach, portforward or proxy as subResource with the options"))
		}
	}
	return errs
}

// katConnectKinds are the options kinds of the pods' subresources a
// CONNECT reaches.
var katConnectKinds = map[string]string{"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions", "proxy": "PodProxyOptions"}

// katConnectOptions is the object of a CONNECT that kat's request r gives
// as its options (kat's request.options, as kube-apiserver passes the
// options object to admission): the options of the pods' subresource
// named by the request, nil for another.
func katConnectOptions(subresource string, r katRequest) map[string]any {
	kind, ok := katConnectKinds[subresource]
	if !ok {
		return nil
	}
	opts := map[string]any{"apiVersion": "v1", "kind": kind}
	for k, v := range r.Options {
		if k != "apiVersion" && k != "kind" {
			opts[k] = v
		}
	}
	meta := map[string]any{"name": r.Name}
	if r.Namespace != "" {
		meta["namespace"] = r.Namespace
	}
	opts["metadata"] = meta
	return opts
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
