package matching

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// NamespaceGetter returns a Namespace by name: from a cache, falling back to the API server
// when the cache has not seen it, as kube-apiserver's namespace matcher does. A missing
// namespace is reported with an error for which apierrors.IsNotFound is true.
type NamespaceGetter interface {
	Namespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// NamespaceGetterFunc adapts a function to NamespaceGetter.
type NamespaceGetterFunc func(ctx context.Context, name string) (*corev1.Namespace, error)

// Namespace calls f.
func (f NamespaceGetterFunc) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return f(ctx, name)
}

// Matcher matches requests against the criteria of policies, bindings and webhooks. It is safe
// for concurrent use if its NamespaceGetter is.
type Matcher struct {
	namespaces NamespaceGetter
	table      *Table
}

// NewMatcher returns a matcher that looks namespaces up with namespaces and equivalent
// resources up in table. With a nil table, matchPolicy Equivalent finds no equivalents; with a
// nil namespaces, requests that need a namespace's labels fail with an internal error.
func NewMatcher(namespaces NamespaceGetter, table *Table) *Matcher {
	return &Matcher{namespaces: namespaces, table: table}
}

// Namespace looks the namespace name up with the matcher's getter: the
// namespace selectors and the engine's namespaceObject read the same
// namespaces.
func (m *Matcher) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	if m.namespaces == nil {
		return nil, errors.New("no namespace getter configured")
	}
	return m.namespaces.Namespace(ctx, name)
}

// Table returns the resource table of the matcher (may be nil).
func (m *Matcher) Table() *Table { return m.table }

// Result is the outcome of matching one set of criteria.
type Result struct {
	// Matches is true when the criteria select the request.
	Matches bool
	// Resource and Kind are those the hook sees the request as: the request's own, or, when
	// only an equivalent resource matched (matchPolicy Equivalent), the equivalent one. The
	// object is then presented converted to Kind.
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

const errNilSelector = "a nil %s selector was passed, please ensure selectors are initialized properly"

// PolicyMatches reports whether a MutatingAdmissionPolicy's matchConstraints select the
// request, as kube-apiserver's policy matcher DefinitionMatches does.
func (m *Matcher) PolicyMatches(ctx context.Context, a *Attributes, policy *admissionregistrationv1.MutatingAdmissionPolicy) (Result, error) {
	if policy == nil {
		return Result{}, errors.New("nil policy")
	}
	return m.DefinitionMatches(ctx, a, policy.Spec.MatchConstraints)
}

// DefinitionMatches reports whether a policy's matchConstraints select the request. Missing
// constraints or selectors are errors (the API server defaults them); see MatchResources for
// the rest.
func (m *Matcher) DefinitionMatches(ctx context.Context, a *Attributes, constraints *admissionregistrationv1.MatchResources) (Result, error) {
	return m.CriteriaDefinitionMatches(ctx, a, NewCriteria(constraints))
}

// CriteriaDefinitionMatches is DefinitionMatches of the constraints c was
// prepared from.
func (m *Matcher) CriteriaDefinitionMatches(ctx context.Context, a *Attributes, c *Criteria) (Result, error) {
	if c.mr == nil {
		return Result{}, fmt.Errorf("policy contained no match constraints, a required field")
	}
	if c.mr.NamespaceSelector == nil || c.mr.ObjectSelector == nil {
		return Result{}, nilSelector(c.mr)
	}
	return m.matchCriteria(ctx, a, c)
}

// nilSelector is upstream's error for matchResources without a namespace
// or an object selector (the API server defaults both), a policy's
// constraints or a binding's: the namespace selector is named first.
func nilSelector(mr *admissionregistrationv1.MatchResources) error {
	if mr.NamespaceSelector == nil {
		return fmt.Errorf(errNilSelector, "namespace")
	}
	return fmt.Errorf(errNilSelector, "object")
}

// Criteria are the matchResources of a policy or binding prepared once for
// matching many requests: their label selectors parsed
// (metav1.LabelSelectorAsSelector), which kube-apiserver's matcher does
// for every request, when the policy set is built. A parsed selector
// depends on the LabelSelector alone and is only read, so the results are
// those of parsing per request (TestDifferentialRandom); a
// changed policy or binding is a new Criteria (NewCriteria of the new
// object). Criteria are safe for concurrent use and must not outlive a
// change of the MatchResources they were prepared from.
type Criteria struct {
	mr                *admissionregistrationv1.MatchResources
	namespace, object parsedSelector
}

// parsedSelector is metav1.LabelSelectorAsSelector's result.
type parsedSelector struct {
	sel labels.Selector
	err error
}

func parseSelector(sel *metav1.LabelSelector) parsedSelector {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return parsedSelector{sel: s, err: err}
}

// NewCriteria prepares mr (nil is allowed: it is matched as nil).
func NewCriteria(mr *admissionregistrationv1.MatchResources) *Criteria {
	c := &Criteria{mr: mr}
	if mr != nil {
		c.namespace = parseSelector(mr.NamespaceSelector)
		c.object = parseSelector(mr.ObjectSelector)
	}
	return c
}

// PolicyBindingMatches reports whether a MutatingAdmissionPolicyBinding's matchResources
// select the request, as kube-apiserver's policy matcher BindingMatches does.
func (m *Matcher) PolicyBindingMatches(ctx context.Context, a *Attributes, binding *admissionregistrationv1.MutatingAdmissionPolicyBinding) (bool, error) {
	if binding == nil {
		return false, errors.New("nil binding")
	}
	return m.BindingMatches(ctx, a, binding.Spec.MatchResources)
}

// BindingMatches reports whether a binding's matchResources select the request. Nil
// matchResources select everything; missing selectors are errors.
func (m *Matcher) BindingMatches(ctx context.Context, a *Attributes, mr *admissionregistrationv1.MatchResources) (bool, error) {
	return m.CriteriaBindingMatches(ctx, a, NewCriteria(mr))
}

// CriteriaBindingMatches is BindingMatches of the matchResources c was
// prepared from.
func (m *Matcher) CriteriaBindingMatches(ctx context.Context, a *Attributes, c *Criteria) (bool, error) {
	if c.mr == nil {
		return true, nil
	}
	if c.mr.NamespaceSelector == nil || c.mr.ObjectSelector == nil {
		return false, nilSelector(c.mr)
	}
	r, err := m.matchCriteria(ctx, a, c)
	return r.Matches, err
}

// MatchResources reports whether mr selects the request, with the semantics of
// k8s.io/apiserver's policy/matching.Matcher.Matches:
//
//   - namespaceSelector and objectSelector are checked first; a selector that does not match
//     ends matching, a selector that fails is reported only if the rules match;
//   - excludeResourceRules win over resourceRules; empty resourceRules select every resource;
//   - a nil selector selects nothing (DefinitionMatches and BindingMatches reject it first).
func (m *Matcher) MatchResources(ctx context.Context, a *Attributes, mr *admissionregistrationv1.MatchResources) (Result, error) {
	return m.matchCriteria(ctx, a, NewCriteria(mr))
}

// matchCriteria is MatchResources of the matchResources c was prepared
// from.
func (m *Matcher) matchCriteria(ctx context.Context, a *Attributes, c *Criteria) (Result, error) {
	if a == nil {
		return Result{}, errors.New("nil request attributes")
	}
	mr := c.mr
	if mr == nil {
		return Result{}, fmt.Errorf("nil match resources")
	}
	selected, selErr := m.matchSelectors(ctx, c.namespace, c.object, a)
	if !selected {
		return Result{}, nil
	}

	if excluded, _, err := m.matchesResourceRules(mr.ExcludeResourceRules, mr.MatchPolicy, a); excluded || err != nil {
		return Result{}, err
	}

	var (
		isMatch  bool
		result   Result
		matchErr error
	)
	if len(mr.ResourceRules) == 0 {
		isMatch = true
		result = Result{Matches: true, Resource: a.Resource, Kind: a.Kind}
	} else {
		isMatch, result, matchErr = m.matchesResourceRules(mr.ResourceRules, mr.MatchPolicy, a)
	}
	if matchErr != nil {
		return Result{}, matchErr
	}
	if !isMatch {
		return Result{}, nil
	}
	if selErr != nil {
		return Result{}, selErr
	}
	return result, nil
}

// matchSelectors checks the namespace and object selectors as upstream's
// matchers do before the rules: selected is false when a selector does not
// match, which ends matching; a selector that fails gives err (the
// namespace selector's first), which is reported only if the rules match.
func (m *Matcher) matchSelectors(ctx context.Context, nsSel, objSel parsedSelector, a *Attributes) (selected bool, err error) {
	matches, nsErr := m.matchNamespaceSelector(ctx, nsSel, a)
	if !matches && nsErr == nil {
		return false, nil
	}
	matches, objErr := matchObjectSelector(objSel, a)
	if !matches && objErr == nil {
		return false, nil
	}
	if nsErr != nil {
		return true, nsErr
	}
	return true, objErr
}

func (m *Matcher) matchesResourceRules(namedRules []admissionregistrationv1.NamedRuleWithOperations, matchPolicy *admissionregistrationv1.MatchPolicyType, a *Attributes) (bool, Result, error) {
	if len(namedRules) == 0 {
		// No rule to match, exactly or through an equivalent resource (most
		// policies' excludeResourceRules): without the table's lookup.
		return false, Result{}, nil
	}
	for i := range namedRules {
		if !ruleMatches(&namedRules[i].RuleWithOperations, a, a.Resource) {
			continue
		}
		if nameMatches(namedRules[i].ResourceNames, a.Name) {
			return true, Result{Matches: true, Resource: a.Resource, Kind: a.Kind}, nil
		}
	}
	// Without a policy or with Exact, no fuzzy matching (the API defaults to Equivalent).
	if matchPolicy == nil || *matchPolicy == admissionregistrationv1.Exact {
		return false, Result{}, nil
	}
	equivalents := m.equivalents(a)
	for i := range namedRules {
		for _, equivalent := range equivalents {
			if equivalent == a.Resource {
				continue
			}
			if !ruleMatches(&namedRules[i].RuleWithOperations, a, equivalent) {
				continue
			}
			kind := m.table.kindFor(equivalent, a.Subresource)
			if kind.Empty() {
				return false, Result{}, fmt.Errorf("unable to convert to %v: unknown kind", equivalent)
			}
			if nameMatches(namedRules[i].ResourceNames, a.Name) {
				return true, Result{Matches: true, Resource: equivalent, Kind: kind}, nil
			}
		}
	}
	return false, Result{}, nil
}

// nameMatches: an empty list matches every name, including the empty name of a CREATE with
// generateName; otherwise the name must be listed.
func nameMatches(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func (m *Matcher) equivalents(a *Attributes) []schema.GroupVersionResource {
	if m.table == nil {
		return nil
	}
	return m.table.EquivalentResourcesFor(a.Resource, a.Subresource)
}

func (t *Table) kindFor(gvr schema.GroupVersionResource, sub string) schema.GroupVersionKind {
	if t == nil {
		return schema.GroupVersionKind{}
	}
	return t.KindFor(gvr, sub)
}

// MutatingWebhookMatches reports whether a webhook of a MutatingWebhookConfiguration is called
// for the request, as kube-apiserver's ShouldCallHook decides before matchConditions:
// selectors, rules (no resourceNames, no exclusions) and matchPolicy. Errors are API status
// errors, reported only if the rules match.
func (m *Matcher) MutatingWebhookMatches(ctx context.Context, a *Attributes, w *admissionregistrationv1.MutatingWebhook) (Result, error) {
	if w == nil {
		return Result{}, errors.New("nil webhook")
	}
	return m.webhookMatches(ctx, a, w.NamespaceSelector, w.ObjectSelector, w.Rules, w.MatchPolicy)
}

// ValidatingWebhookMatches is MutatingWebhookMatches for a webhook of a
// ValidatingWebhookConfiguration.
func (m *Matcher) ValidatingWebhookMatches(ctx context.Context, a *Attributes, w *admissionregistrationv1.ValidatingWebhook) (Result, error) {
	if w == nil {
		return Result{}, errors.New("nil webhook")
	}
	return m.webhookMatches(ctx, a, w.NamespaceSelector, w.ObjectSelector, w.Rules, w.MatchPolicy)
}

func (m *Matcher) webhookMatches(ctx context.Context, a *Attributes, nsSel, objSel *metav1.LabelSelector, rules []admissionregistrationv1.RuleWithOperations, matchPolicy *admissionregistrationv1.MatchPolicyType) (Result, error) {
	if a == nil {
		return Result{}, errors.New("nil request attributes")
	}
	selected, selErr := m.matchSelectors(ctx, parseSelector(nsSel), parseSelector(objSel), a)
	if !selected {
		return Result{}, nil
	}

	var result Result
	for i := range rules {
		if ruleMatches(&rules[i], a, a.Resource) {
			result = Result{Matches: true, Resource: a.Resource, Kind: a.Kind}
			break
		}
	}
	// Unlike policies, webhooks look at equivalents only for an explicit Equivalent.
	if !result.Matches && matchPolicy != nil && *matchPolicy == admissionregistrationv1.Equivalent {
		equivalents := m.equivalents(a)
	outer:
		for i := range rules {
			for _, equivalent := range equivalents {
				if equivalent == a.Resource {
					continue
				}
				if ruleMatches(&rules[i], a, equivalent) {
					kind := m.table.kindFor(equivalent, a.Subresource)
					if kind.Empty() {
						return Result{}, apierrors.NewInternalError(fmt.Errorf("unable to convert to %v: unknown kind", equivalent))
					}
					result = Result{Matches: true, Resource: equivalent, Kind: kind}
					break outer
				}
			}
		}
	}
	if !result.Matches {
		return Result{}, nil
	}
	if selErr != nil {
		return Result{}, selErr
	}
	return result, nil
}

var namespaceResource = schema.GroupVersionResource{Group: "", Version: "v1", Resource: "namespaces"}

// ruleMatches is k8s.io/apiserver's rules.Matcher.Matches with the request's resource replaced
// by resource.
func ruleMatches(r *admissionregistrationv1.RuleWithOperations, a *Attributes, resource schema.GroupVersionResource) bool {
	return scopeMatches(r.Scope, a, resource) &&
		operationMatches(r.Operations, a.Operation) &&
		exactOrWildcard(r.APIGroups, resource.Group) &&
		exactOrWildcard(r.APIVersions, resource.Version) &&
		resourceMatches(r.Resources, resource.Resource, a.Subresource)
}

func exactOrWildcard(items []string, requested string) bool {
	for _, item := range items {
		if item == "*" || item == requested {
			return true
		}
	}
	return false
}

func scopeMatches(scope *admissionregistrationv1.ScopeType, a *Attributes, resource schema.GroupVersionResource) bool {
	if scope == nil || *scope == admissionregistrationv1.AllScopes {
		return true
	}
	switch *scope {
	case admissionregistrationv1.NamespacedScope:
		// Namespace objects are cluster-scoped even though requests for them carry a namespace.
		return resource != namespaceResource && a.Namespace != metav1.NamespaceNone
	case admissionregistrationv1.ClusterScope:
		return resource == namespaceResource || a.Namespace == metav1.NamespaceNone
	default:
		return false
	}
}

func operationMatches(ops []admissionregistrationv1.OperationType, op admission.Operation) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll || o == admissionregistrationv1.OperationType(op) {
			return true
		}
	}
	return false
}

// splitResource splits "res/sub" at the first slash.
func splitResource(resSub string) (res, sub string) {
	if i := strings.IndexByte(resSub, '/'); i >= 0 {
		return resSub[:i], resSub[i+1:]
	}
	return resSub, ""
}

func resourceMatches(resources []string, opRes, opSub string) bool {
	for _, rs := range resources {
		res, sub := splitResource(rs)
		if (res == "*" || res == opRes) && (sub == "*" || sub == opSub) {
			return true
		}
	}
	return false
}

// matchNamespaceSelector is k8s.io/apiserver's namespace.Matcher.MatchNamespaceSelector.
// The selector is parsed beforehand (Criteria); its parse error is reported
// where upstream parses it.
func (m *Matcher) matchNamespaceSelector(ctx context.Context, sel parsedSelector, a *Attributes) (bool, error) {
	if len(a.Namespace) == 0 && a.Resource.Resource != "namespaces" {
		// Cluster-scoped resources other than Namespace are not constrained by a
		// namespace selector.
		return true, nil
	}
	selector, err := sel.sel, sel.err
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if selector.Empty() {
		return true, nil
	}
	nsLabels, err := m.namespaceLabels(ctx, a)
	// err != nil first: IsNotFound of a nil error allocates (errors.As).
	if err != nil && apierrors.IsNotFound(err) {
		status, ok := err.(apierrors.APIStatus)
		if !ok {
			return false, apierrors.NewInternalError(err)
		}
		return false, &apierrors.StatusError{ErrStatus: status.Status()}
	}
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	return selector.Matches(labels.Set(nsLabels)), nil
}

// namespaceLabels: a Namespace being created or updated is matched on its own labels, anything
// else on the labels of the namespace the request is in.
func (m *Matcher) namespaceLabels(ctx context.Context, a *Attributes) (map[string]string, error) {
	if a.Resource.Resource == "namespaces" && len(a.Subresource) == 0 &&
		(a.Operation == admission.Create || a.Operation == admission.Update) {
		accessor, err := meta.Accessor(a.object())
		if err != nil {
			return nil, err
		}
		return accessor.GetLabels(), nil
	}
	if len(a.Namespace) == 0 {
		// kube-apiserver misses in its cache and asks the API server, whose client refuses
		// an empty name.
		return nil, errors.New("resource name may not be empty")
	}
	if m.namespaces == nil {
		return nil, errors.New("no namespace getter configured")
	}
	ns, err := m.namespaces.Namespace(ctx, a.Namespace)
	if err != nil {
		return nil, err
	}
	if ns == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), a.Namespace)
	}
	return ns.Labels, nil
}

// matchObjectSelector is k8s.io/apiserver's object.Matcher.MatchObjectSelector: the new or
// the old object must match; a nil object never does.
func matchObjectSelector(sel parsedSelector, a *Attributes) (bool, error) {
	selector, err := sel.sel, sel.err
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if selector.Empty() {
		return true, nil
	}
	return matchObject(a.object(), selector) || matchObject(a.oldObject(), selector), nil
}

func matchObject(obj runtime.Object, selector labels.Selector) bool {
	if obj == nil {
		return false
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// The labels read in place (labelsOf: the same as GetLabels').
		return selector.Matches(labelsOf(u.Object))
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return selector.Matches(labels.Set(accessor.GetLabels()))
}

// admissionPolicyResources are skipped by API-based policies (k8s.io/apiserver
// policy/generic admissionResources).
var admissionPolicyResources = map[schema.GroupResource]bool{
	{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicies"}:       true,
	{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicybindings"}: true,
	{Group: admissionregistrationv1.GroupName, Resource: "mutatingadmissionpolicies"}:         true,
	{Group: admissionregistrationv1.GroupName, Resource: "mutatingadmissionpolicybindings"}:   true,
}

// excludedAdmissionResources are the non-persisted resources no policy and (with the
// ExcludeAdmissionWebhookVirtualResources feature, on by default in 1.37) no webhook sees
// (k8s.io/kubernetes pkg/kubeapiserver/admission/exclusion).
var excludedAdmissionResources = map[schema.GroupResource]bool{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             true,
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      true,
}

// PolicyExempt reports whether admission policies defined through the API never see the
// request: requests on the policy and binding resources themselves (any version and
// subresource) and on the authentication and authorization review resources.
func PolicyExempt(a *Attributes) bool {
	if a == nil {
		return false
	}
	gr := a.Resource.GroupResource()
	return excludedAdmissionResources[gr] || admissionPolicyResources[gr]
}

// WebhookExempt reports whether webhooks defined through the API never see the request:
// objects whose kind is a webhook configuration or an admission policy or binding, and the
// authentication and authorization review resources.
func WebhookExempt(a *Attributes) bool {
	if a == nil {
		return false
	}
	if excludedAdmissionResources[a.Resource.GroupResource()] {
		return true
	}
	if a.Kind.Group == admissionregistrationv1.GroupName {
		switch a.Kind.Kind {
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
			"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
			return true
		}
	}
	return false
}
