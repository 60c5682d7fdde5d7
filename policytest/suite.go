package policytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// webhookPrefix starts the names of webhooks in expect.applied and
// expect.notApplied ("webhook:CONFIGURATION/WEBHOOK"): no policy name has
// a colon.
const webhookPrefix = "webhook:"

// BindingsAuto is the value of Suite.Bindings that binds every policy
// no binding names.
const BindingsAuto = "auto"

// APIVersion and Kind identify a suite file.
const (
	APIVersion = "mutatis.dev/v1alpha1"
	Kind       = "PolicyTest"
)

// FileSuffix ends the names of the suite files that Discover finds;
// FileSuffixYML, the other spelling, too.
const (
	FileSuffix    = ".mutatis-test.yaml"
	FileSuffixYML = ".mutatis-test.yml"
)

// IsSuiteFile tells whether a file name is a suite's (ends in FileSuffix
// or FileSuffixYML).
func IsSuiteFile(name string) bool {
	return strings.HasSuffix(name, FileSuffix) || strings.HasSuffix(name, FileSuffixYML)
}

// suiteName is the name of a suite file without its directory and suffix.
func suiteName(file string) string {
	base := filepath.Base(file)
	if t, ok := strings.CutSuffix(base, FileSuffix); ok {
		return t
	}
	return strings.TrimSuffix(base, FileSuffixYML)
}

// Suite is one PolicyTest file: the policies under test, the simulated
// cluster around them, and the cases. Paths are relative to the suite file.
type Suite struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata,omitempty"`
	// Policies are files or directories of MutatingAdmissionPolicies and
	// bindings (other objects found there join the resources). A suite
	// without them tests Options.Policies (`mutatis test --policies`).
	Policies []string `json:"policies,omitempty"`
	// Bindings "auto" gives every policy that no binding names one
	// binding of its own (named as the policy, matching everything the
	// policy matches, without params): a policy tested without writing a
	// binding.
	Bindings string `json:"bindings,omitempty"`
	// SkipIdempotence names policies whose output the idempotence check
	// (--idempotence, Defaults.Idempotence, Case.Idempotence) leaves
	// alone: re-admitting the final object runs every other policy.
	SkipIdempotence []string `json:"skipIdempotence,omitempty"`
	// Resources are the other objects of the simulated cluster: Namespaces,
	// params, CRDs, RBAC; file or directory paths, or inline objects.
	Resources []Manifest `json:"resources,omitempty"`
	// Defaults apply to every case that does not say otherwise.
	Defaults Defaults `json:"defaults,omitempty"`
	// AdmissionPlugins chooses kube-apiserver's admission plugins that run
	// before the policies; without it, Options.AdmissionPlugins (the
	// flags of `mutatis test`) or kube-apiserver 1.37's default set.
	AdmissionPlugins *AdmissionPlugins `json:"admissionPlugins,omitempty"`
	// Webhooks are files or directories of MutatingWebhookConfigurations
	// (admissionregistration.k8s.io v1 or v1beta1) that kube-apiserver
	// calls after the policies: every case runs through the whole chain
	// (docs/chain.md). Without it, Options.Webhooks (`mutatis test
	// --webhooks`).
	Webhooks []string `json:"webhooks,omitempty"`
	// ServiceURLs map the webhooks' clientConfig.service to reachable
	// URLs: "NS/NAME[:PORT]=URL", as `--service-url`.
	ServiceURLs []string `json:"serviceURLs,omitempty"`
	Cases       []Case   `json:"cases"`
}

// AdmissionPlugins are kube-apiserver's flags that choose its admission
// plugins, with its plugin names (admissionplugins.Flags).
type AdmissionPlugins struct {
	// Enable is --enable-admission-plugins: plugins besides the default
	// ones.
	Enable []string `json:"enable,omitempty"`
	// Disable is --disable-admission-plugins: default plugins not to run.
	Disable []string `json:"disable,omitempty"`
	// Only is the exact set (--admission-plugins, kube-apiserver's
	// --admission-control); it excludes Enable and Disable.
	Only []string `json:"only,omitempty"`
	// ConfigFile is --admission-control-config-file: kube-apiserver's
	// AdmissionConfiguration (PodSecurity's defaults and exemptions), a
	// path relative to the suite's file.
	ConfigFile string `json:"configFile,omitempty"`
}

// flags are p as admissionplugins.Flags, ConfigFile resolved against dir.
func (p *AdmissionPlugins) flags(dir string) admissionplugins.Flags {
	f := admissionplugins.Flags{Enable: p.Enable, Disable: p.Disable, Only: p.Only}
	if p.ConfigFile != "" {
		f.ConfigFile = resolve(dir, p.ConfigFile)
	}
	return f
}

// Metadata names a suite; the name defaults to the file name without its
// suffix.
type Metadata struct {
	Name string `json:"name,omitempty"`
}

// Defaults are the request attributes cases inherit.
type Defaults struct {
	// Operation is CREATE, UPDATE, DELETE or CONNECT; without it, CREATE
	// (UPDATE when the case has an old object).
	Operation string `json:"operation,omitempty"`
	// Namespace of namespaced objects that name none (default "default").
	Namespace string `json:"namespace,omitempty"`
	// User is the requesting user (default: admin in system:masters and
	// system:authenticated).
	User *User `json:"user,omitempty"`
	// Idempotence turns the idempotence check on (true) or off (false)
	// for every case of the suite, whatever --idempotence says.
	Idempotence *bool `json:"idempotence,omitempty"`
}

// User is the requesting user of a case.
type User struct {
	Name   string              `json:"name,omitempty"`
	UID    string              `json:"uid,omitempty"`
	Groups []string            `json:"groups,omitempty"`
	Extra  map[string][]string `json:"extra,omitempty"`
}

// Case is one admission request and what must come of it.
type Case struct {
	Name        string `json:"name"`
	Operation   string `json:"operation,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	User        *User  `json:"user,omitempty"`
	DryRun      bool   `json:"dryRun,omitempty"`
	// NoDefaults evaluates the case's objects exactly as written: no
	// decoding and defaulting as kube-apiserver does to a request body, no
	// defaulting after mutations, no conversion through the internal
	// version.
	NoDefaults bool `json:"noDefaults,omitempty"`
	// Object is the object under admission, inline or a file; ObjectRef
	// names one of the resources instead.
	Object    *Manifest  `json:"object,omitempty"`
	ObjectRef *ObjectRef `json:"objectRef,omitempty"`
	// OldObject (or OldObjectRef) is the stored object of an UPDATE, or
	// the deleted object of a DELETE (which may give it as Object
	// instead, as `mutatis apply --operation DELETE` takes it): a DELETE
	// has no object, MutatingAdmissionPolicies never run on it, the
	// validating stage does.
	OldObject    *Manifest  `json:"oldObject,omitempty"`
	OldObjectRef *ObjectRef `json:"oldObjectRef,omitempty"`
	// Resources are added to the suite's resources for this case only.
	Resources []Manifest `json:"resources,omitempty"`
	// Idempotence turns the idempotence check on (true) or off (false)
	// for this case, whatever the suite's defaults and --idempotence say.
	Idempotence *bool  `json:"idempotence,omitempty"`
	Expect      Expect `json:"expect,omitempty"`
}

// ObjectRef names an object of the suite's (or the case's) resources.
type ObjectRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

func (r ObjectRef) String() string {
	s := r.Kind
	if r.APIVersion != "" {
		s = r.APIVersion + " " + s
	}
	if r.Namespace != "" {
		return s + " " + r.Namespace + "/" + r.Name
	}
	return s + " " + r.Name
}

// Expect holds the expectations of a case; every one that is set must
// hold. A case without `denied` expects the request to be admitted.
type Expect struct {
	// Object is the whole final object.
	Object *Manifest `json:"object,omitempty"`
	// ObjectContains is a partial object the final object must contain.
	ObjectContains *Manifest `json:"objectContains,omitempty"`
	// Patch is the RFC 6902 JSON patch from the request's object to the
	// final object, compared by effect.
	Patch *Patch `json:"patch,omitempty"`
	// Unchanged expects the object to come out as it went in.
	Unchanged bool `json:"unchanged,omitempty"`
	// Denied expects a denial.
	Denied *Denial `json:"denied,omitempty"`
	// Invalid is a regular expression the message of kube-apiserver's
	// refusal of the admitted object by API validation (422 `<Kind> "<name>"
	// is invalid: …`) must match. Without it, a case whose admitted object
	// is invalid fails.
	Invalid string `json:"invalid,omitempty"`
	// Applied and NotApplied name policies ("policy") or policy bindings
	// ("policy/binding") that must have, or must not have, run their
	// mutations, or webhooks ("webhook:CONFIGURATION/WEBHOOK", or
	// "webhook:CONFIGURATION" for any of its webhooks) that must have, or
	// must not have, been called and admitted the request.
	Applied    []string `json:"applied,omitempty"`
	NotApplied []string `json:"notApplied,omitempty"`
	// MaxRuntimeCost bounds the runtime cost of a policy ("policy": the sum
	// over its mutations, per invocation) or of one mutation
	// ("policy[0]").
	MaxRuntimeCost map[string]int64 `json:"maxRuntimeCost,omitempty"`
	// IgnoredErrors are regular expressions for the errors that
	// failurePolicy Ignore drops: each must match the message of at least
	// one of them (the message a denial would have had under Fail,
	// "policy 'p' with binding 'b' denied request: …"). An ignored error
	// no entry matches is a warning of the case, and a failure with
	// --strict (Options.Strict).
	IgnoredErrors []string `json:"ignoredErrors,omitempty"`
	// Warnings are Go regular expressions, each matching at least one of
	// the warnings kube-apiserver returns for the request (the decoder's,
	// the admission chain's, the registry's and the validating stage's:
	// a ValidatingAdmissionPolicy's Warn action, PodSecurity's, a
	// webhook's).
	Warnings []string `json:"warnings,omitempty"`
	// AuditAnnotations are audit annotations the request must leave, each
	// with exactly this value (a ValidatingAdmissionPolicy's
	// auditAnnotations keyed "POLICY/KEY", a webhook's, PodSecurity's).
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	// ValidationFailures are the failed validations of
	// ValidatingAdmissionPolicies whose bindings' validationActions hold
	// Audit: each must be among the request's (kube-apiserver's audit
	// annotation validation.policy.admission.k8s.io/validation_failure).
	ValidationFailures []ValidationFailure `json:"validationFailures,omitempty"`
}

// ValidationFailure is one failed validation of a
// ValidatingAdmissionPolicy as kube-apiserver's audit annotation
// validation.policy.admission.k8s.io/validation_failure records it; the
// fields left out match any.
type ValidationFailure struct {
	// Policy and Binding name the policy and its binding.
	Policy  string `json:"policy"`
	Binding string `json:"binding,omitempty"`
	// Message must occur in the failure's message.
	Message string `json:"message,omitempty"`
	// ExpressionIndex is the index of the validation that failed.
	ExpressionIndex *int `json:"expressionIndex,omitempty"`
	// ValidationActions are the binding's actions, as the annotation
	// lists them.
	ValidationActions []string `json:"validationActions,omitempty"`
}

// Patch is a JSON patch: a list of operations.
type Patch []map[string]any

// Denial is what a denial must look like. In YAML it is `true`, a message
// substring, or an object.
type Denial struct {
	// Message must occur in the Status message.
	Message string `json:"message,omitempty"`
	// MessageRegex must match the Status message.
	MessageRegex string `json:"messageRegex,omitempty"`
	// Code is the HTTP code of the Status (e.g. 403), if set.
	Code int32 `json:"code,omitempty"`
	// By names the admission plugin that refused, as kube-apiserver names
	// it: a built-in plugin ("PodSecurity", "LimitRanger" …),
	// "MutatingAdmissionPolicy", "MutatingAdmissionWebhook",
	// "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook"; if set.
	By string `json:"by,omitempty"`

	// unknown are the fields of the YAML object that Denial lacks (one a
	// line; a string keeps Denial comparable), reported with their path
	// by the suite's validation.
	unknown string
}

// UnmarshalJSON accepts true, a string (the message substring) or an
// object.
func (d *Denial) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("true")):
		*d = Denial{}
		return nil
	case bytes.Equal(b, []byte("false")):
		return fmt.Errorf("denied: false is the default; leave it out")
	case len(b) > 0 && b[0] == '"':
		*d = Denial{}
		return json.Unmarshal(b, &d.Message)
	}
	type plain Denial
	var p plain
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, &p); err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(b, &p)
	if err != nil {
		return err
	}
	*d = Denial(p)
	for _, e := range strict {
		if m := unknownFieldError.FindStringSubmatch(e.Error()); m != nil {
			d.unknown += m[1] + "\n"
		}
	}
	return nil
}

// Manifest is an object given inline or as a path (relative to the suite
// file). In YAML, a string is a path and a mapping an inline object.
type Manifest struct {
	Path   string
	Inline map[string]any
}

// UnmarshalJSON accepts a string (a path) or an object.
func (m *Manifest) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*m = Manifest{}
		return json.Unmarshal(b, &m.Path)
	}
	var obj map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, &obj); err != nil {
		return fmt.Errorf("must be a path or an object: %w", err)
	}
	if obj == nil {
		return fmt.Errorf("must be a path or an object, not null")
	}
	*m = Manifest{Inline: obj}
	return nil
}

// MarshalJSON writes the path or the inline object.
func (m Manifest) MarshalJSON() ([]byte, error) {
	if m.Inline != nil {
		return json.Marshal(m.Inline)
	}
	return json.Marshal(m.Path)
}

// InputError is a problem of a suite file: unreadable, malformed or
// inconsistent. It names the file and the field path.
type InputError struct {
	File string
	Errs field.ErrorList
	Err  error
}

func (e *InputError) Error() string {
	if e.Err != nil {
		return e.File + ": " + e.Err.Error()
	}
	lines := make([]string, len(e.Errs))
	for i, fe := range e.Errs {
		lines[i] = e.File + ": " + fieldErrorText(fe)
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the underlying error, if any.
func (e *InputError) Unwrap() error { return e.Err }

// ParseSuite decodes and validates one suite file's content (named file in
// errors). It does not read the files the suite refers to; LoadSuite does.
func ParseSuite(file string, data []byte) (*Suite, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &InputError{File: file, Err: fmt.Errorf("empty suite")}
	}
	if n := countDocuments(data); n > 1 {
		return nil, &InputError{File: file, Err: fmt.Errorf("a suite file holds one PolicyTest document, found %d", n)}
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &InputError{File: file, Err: err}
	}
	s := &Suite{}
	strict, err := sigsjson.UnmarshalStrict(js, s)
	if err != nil {
		return nil, &InputError{File: file, Err: jsonErrorIn(js, err)}
	}
	var errs field.ErrorList
	for _, e := range strict {
		errs = append(errs, unknownField(e))
	}
	errs = append(errs, s.validate()...)
	if len(errs) > 0 {
		return nil, &InputError{File: file, Errs: errs}
	}
	if s.Metadata.Name == "" {
		s.Metadata.Name = suiteName(file)
		s.Metadata.Name = strings.TrimSuffix(s.Metadata.Name, filepath.Ext(s.Metadata.Name))
	}
	return s, nil
}

// jsonError turns a decoding error into one that names the field.
func jsonError(err error) error { return jsonErrorIn(nil, err) }

// jsonErrorIn is jsonError for an error met decoding js: the field is
// named with its indexes ("cases[1].expect.unchanged").
func jsonErrorIn(js []byte, err error) error {
	var te *json.UnmarshalTypeError
	if ok := asTypeError(err, &te); ok && te.Field != "" {
		field := te.Field
		if p := pathAt(js, te.Offset); js != nil && p != "" {
			field = p
		}
		return fmt.Errorf("%s: cannot be a %s (want %s)", field, te.Value, te.Type)
	}
	return err
}

func asTypeError(err error, target **json.UnmarshalTypeError) bool {
	for err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			*target = te
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// countDocuments counts the non-empty YAML documents of data.
func countDocuments(data []byte) int {
	n := 0
	for _, d := range docSeparator.Split(string(data), -1) {
		empty := true
		for _, l := range strings.Split(d, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				empty = false
				break
			}
		}
		if !empty {
			n++
		}
	}
	return n
}

var operations = map[string]bool{"CREATE": true, "UPDATE": true, "DELETE": true, "CONNECT": true}

// operationNames are the values of operation, as errors list them.
var operationNames = []string{"CREATE", "UPDATE", "DELETE", "CONNECT"}

func (s *Suite) validate() field.ErrorList {
	var errs field.ErrorList
	if s.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), s.APIVersion, []string{APIVersion}))
	}
	if s.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), s.Kind, []string{Kind}))
	}
	if s.Policies != nil && len(s.Policies) == 0 && len(s.Webhooks) == 0 {
		errs = append(errs, field.Required(field.NewPath("policies"), "at least one file or directory of policies"))
	}
	if s.Bindings != "" && s.Bindings != BindingsAuto {
		errs = append(errs, field.NotSupported(field.NewPath("bindings"), s.Bindings, []string{BindingsAuto}))
	}
	for i, p := range s.SkipIdempotence {
		if p == "" {
			errs = append(errs, field.Required(field.NewPath("skipIdempotence").Index(i), "a policy name"))
		}
	}
	for i, p := range s.Policies {
		if p == "" {
			errs = append(errs, field.Required(field.NewPath("policies").Index(i), ""))
		}
	}
	for i, p := range s.Webhooks {
		if p == "" {
			errs = append(errs, field.Required(field.NewPath("webhooks").Index(i), ""))
		}
	}
	urls := webhookclient.ServiceURLs{}
	for i, m := range s.ServiceURLs {
		if err := urls.Add(m); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("serviceURLs").Index(i), m, err.Error()))
		}
	}
	errs = append(errs, validateManifests(field.NewPath("resources"), s.Resources)...)
	d := field.NewPath("defaults")
	if op := s.Defaults.Operation; op != "" && !operations[op] {
		errs = append(errs, field.NotSupported(d.Child("operation"), op, operationNames))
	}
	if len(s.Cases) == 0 {
		errs = append(errs, field.Required(field.NewPath("cases"), "at least one case"))
	}
	seen := map[string]int{}
	for i := range s.Cases {
		p := field.NewPath("cases").Index(i)
		c := &s.Cases[i]
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if j, ok := seen[c.Name]; ok {
			errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (cases[%d])", c.Name, j)))
		} else {
			seen[c.Name] = i
		}
		errs = append(errs, c.validate(p, s.Defaults)...)
	}
	return errs
}

func validateManifests(p *field.Path, ms []Manifest) field.ErrorList {
	var errs field.ErrorList
	for i, m := range ms {
		if m.Inline == nil && m.Path == "" {
			errs = append(errs, field.Required(p.Index(i), "a path or an object"))
		}
	}
	return errs
}

func (c *Case) validate(p *field.Path, d Defaults) field.ErrorList {
	var errs field.ErrorList
	if c.Operation != "" && !operations[c.Operation] {
		errs = append(errs, field.NotSupported(p.Child("operation"), c.Operation, operationNames))
	}
	op := c.operation(d)
	hasObject, hasOld := c.Object != nil || c.ObjectRef != nil, c.OldObject != nil || c.OldObjectRef != nil
	switch {
	case op == "DELETE" && hasObject && hasOld:
		errs = append(errs, field.Forbidden(p.Child("object"), "a DELETE has no object: give the deleted object as oldObject (or as object)"))
	case op == "DELETE" && !hasObject && !hasOld:
		errs = append(errs, field.Required(p.Child("oldObject"), "the deleted object: oldObject, oldObjectRef, object or objectRef"))
	case op != "DELETE" && !hasObject:
		errs = append(errs, field.Required(p.Child("object"), "object or objectRef"))
	}
	if c.Object != nil && c.ObjectRef != nil {
		errs = append(errs, field.Forbidden(p.Child("objectRef"), "object and objectRef are mutually exclusive"))
	}
	if c.OldObject != nil && c.OldObjectRef != nil {
		errs = append(errs, field.Forbidden(p.Child("oldObjectRef"), "oldObject and oldObjectRef are mutually exclusive"))
	}
	for _, r := range []struct {
		name string
		ref  *ObjectRef
	}{{"objectRef", c.ObjectRef}, {"oldObjectRef", c.OldObjectRef}} {
		if r.ref == nil {
			continue
		}
		if r.ref.Kind == "" {
			errs = append(errs, field.Required(p.Child(r.name, "kind"), ""))
		}
		if r.ref.Name == "" {
			errs = append(errs, field.Required(p.Child(r.name, "name"), ""))
		}
	}
	if op == "UPDATE" && !hasOld {
		errs = append(errs, field.Required(p.Child("oldObject"), "an UPDATE has an old object"))
	}
	if op != "UPDATE" && op != "DELETE" && hasOld {
		errs = append(errs, field.Forbidden(p.Child("oldObject"), "only an UPDATE or a DELETE has an old object, not a "+op))
	}
	errs = append(errs, validateManifests(p.Child("resources"), c.Resources)...)
	e := p.Child("expect")
	finalObject := []struct {
		name string
		set  bool
	}{{"object", c.Expect.Object != nil}, {"objectContains", c.Expect.ObjectContains != nil}, {"patch", c.Expect.Patch != nil}, {"unchanged", c.Expect.Unchanged}}
	for _, f := range finalObject {
		switch {
		case !f.set:
		case c.Expect.Denied != nil:
			errs = append(errs, field.Forbidden(e.Child(f.name), "a denied request has no final object"))
		case op == "DELETE":
			errs = append(errs, field.Forbidden(e.Child(f.name), "a DELETE has no final object"))
		}
	}
	if c.Expect.Denied != nil {
		for _, name := range strings.Fields(c.Expect.Denied.unknown) {
			fe := unknownFieldAt(name, reflect.TypeFor[Denial]())
			fe.Field = e.Child("denied").String() + "." + fe.Field
			errs = append(errs, fe)
		}
		if re := c.Expect.Denied.MessageRegex; re != "" {
			if _, err := regexp.Compile(re); err != nil {
				errs = append(errs, field.Invalid(e.Child("denied", "messageRegex"), re, err.Error()))
			}
		}
	}
	for i, op := range derefPatch(c.Expect.Patch) {
		if _, ok := op["op"].(string); !ok {
			errs = append(errs, field.Required(e.Child("patch").Index(i).Child("op"), ""))
		}
		if _, ok := op["path"].(string); !ok {
			errs = append(errs, field.Required(e.Child("patch").Index(i).Child("path"), ""))
		}
	}
	for _, l := range []struct {
		name  string
		names []string
	}{{"applied", c.Expect.Applied}, {"notApplied", c.Expect.NotApplied}} {
		for i, n := range l.names {
			if hook, ok := strings.CutPrefix(n, webhookPrefix); ok {
				if hook == "" || strings.Count(hook, "/") > 1 || strings.HasPrefix(hook, "/") || strings.HasSuffix(hook, "/") {
					errs = append(errs, field.Invalid(e.Child(l.name).Index(i), n, "must be webhook:CONFIGURATION or webhook:CONFIGURATION/WEBHOOK"))
				}
				continue
			}
			if n == "" || strings.Count(n, "/") > 1 {
				errs = append(errs, field.Invalid(e.Child(l.name).Index(i), n, "must be POLICY, POLICY/BINDING or webhook:CONFIGURATION/WEBHOOK"))
			}
		}
	}
	for i, re := range c.Expect.IgnoredErrors {
		if _, err := regexp.Compile(re); err != nil {
			errs = append(errs, field.Invalid(e.Child("ignoredErrors").Index(i), re, err.Error()))
		}
	}
	for i, re := range c.Expect.Warnings {
		if _, err := regexp.Compile(re); err != nil {
			errs = append(errs, field.Invalid(e.Child("warnings").Index(i), re, err.Error()))
		}
	}
	for i, vf := range c.Expect.ValidationFailures {
		if vf.Policy == "" {
			errs = append(errs, field.Required(e.Child("validationFailures").Index(i).Child("policy"), ""))
		}
	}
	for k, v := range c.Expect.MaxRuntimeCost {
		if _, _, err := parseCostKey(k); err != nil {
			errs = append(errs, field.Invalid(e.Child("maxRuntimeCost").Key(k), k, err.Error()))
		}
		if v < 0 {
			errs = append(errs, field.Invalid(e.Child("maxRuntimeCost").Key(k), v, "must not be negative"))
		}
	}
	return errs
}

func derefPatch(p *Patch) Patch {
	if p == nil {
		return nil
	}
	return *p
}

// operation is the case's operation after defaults.
func (c *Case) operation(d Defaults) string {
	switch {
	case c.Operation != "":
		return c.Operation
	case d.Operation != "":
		return d.Operation
	case c.OldObject != nil || c.OldObjectRef != nil:
		return "UPDATE"
	}
	return "CREATE"
}

var costKey = regexp.MustCompile(`^([^\[\]]+?)(?:\[(\d+)\])?$`)

// parseCostKey splits "policy" or "policy[i]" (mutation -1 for the
// former).
func parseCostKey(k string) (policy string, mutation int, err error) {
	m := costKey.FindStringSubmatch(k)
	if m == nil {
		return "", 0, fmt.Errorf("must be POLICY or POLICY[MUTATION INDEX]")
	}
	if m[2] == "" {
		return m[1], -1, nil
	}
	_, err = fmt.Sscan(m[2], &mutation)
	return m[1], mutation, err
}

// readSuiteFile reads and parses a suite file.
func readSuiteFile(file string) (*Suite, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &InputError{File: file, Err: err}
	}
	return ParseSuite(file, data)
}
