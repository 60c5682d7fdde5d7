package lsp

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"go.lsp.dev/protocol"
)

// authzTypePrefix names the types of Kubernetes' CEL authorization
// library (k8s.io/apiserver/pkg/cel/library/authz.go): Authorizer,
// GroupCheck, ResourceCheck, PathCheck, Decision.
const authzTypePrefix = "kubernetes.authorization."

// authzDocs document the authorization library's member functions, by
// name, after authz.go's own documentation (the library declares none the
// environment could give).
var authzDocs = map[string]string{
	"group":          "A GroupCheck of the API resources of an API group ('' is the core group): authorizer.group('apps')",
	"path":           "A PathCheck of a non-resource request path: authorizer.path('/healthz'); an empty path is an error",
	"serviceAccount": "An Authorizer checking for the service account of namespace and name instead of the request's user: authorizer.serviceAccount('default', 'builder')",
	"resource":       "A ResourceCheck of an API resource (its lower-case plural name): authorizer.group('apps').resource('deployments')",
	"subresource":    "The ResourceCheck of a subresource ('' unsets it): .resource('pods').subresource('status')",
	"namespace":      "The ResourceCheck in a namespace ('' is the cluster scope, the default): .resource('pods').namespace('default')",
	"name":           "The ResourceCheck of one resource name ('' unsets it): .namespace('test').name('backend')",
	"fieldSelector":  "The ResourceCheck limited by a field selector: .fieldSelector('spec.nodeName=node1')",
	"labelSelector":  "The ResourceCheck limited by a label selector: .labelSelector('app=web')",
	"check":          "Checks whether the request's principal may use the verb (a ResourceCheck: the API verb on the resource; a PathCheck: the HTTP verb on the path); may be expensive with webhook authorization",
	"allowed":        "Whether the decision is \"allow\" (\"no opinion\" is not)",
	"reason":         "The reason of the authorization decision",
	"errored":        "Whether the authorization check resulted in an error",
	"error":          "The error of the authorization check, or the empty string",
}

// completeMembers lists, where the cursor follows a receiver expression of
// one of the authorization library's types and a dot (authorizer.,
// authorizer.group('apps').resource('deployments').,
// variables.check.), the member functions the site's environment declares
// for the receiver's type as its type checker sees it, and the variables
// qualified by the receiver (authorizer.requestResource). ok is false for
// any other receiver.
func (a *Analysis) completeMembers(site *celSite, expr []rune, i int) ([]protocol.CompletionItem, bool) {
	recv, partial, ok := receiverBefore(expr, i)
	if !ok || !(strings.HasPrefix(recv, "authorizer") || strings.HasPrefix(recv, "variables.") || strings.Contains(recv, "(")) {
		return nil, false
	}
	env := a.siteEnv(site)
	if env == nil {
		return nil, false
	}
	ast, iss := env.Compile(recv)
	if iss.Err() != nil || !strings.HasPrefix(ast.OutputType().String(), authzTypePrefix) {
		return nil, false
	}
	t := ast.OutputType()
	var items []protocol.CompletionItem
	for name, fn := range env.Functions() {
		if !strings.HasPrefix(name, partial) {
			continue
		}
		for _, o := range fn.OverloadDecls() {
			args := o.ArgTypes()
			if !o.IsMemberFunction() || len(args) == 0 || !args[0].IsExactType(t) {
				continue
			}
			params := make([]string, 0, len(args)-1)
			for _, p := range args[1:] {
				params = append(params, p.String())
			}
			doc := fn.Description()
			if doc == "" {
				doc = authzDocs[name]
			}
			items = append(items, protocol.CompletionItem{Label: name, Kind: protocol.CompletionItemKindMethod,
				Detail: fmt.Sprintf("%s.%s(%s) -> %s", t, name, strings.Join(params, ", "), o.ResultType()), Documentation: doc})
		}
	}
	for _, v := range env.Variables() {
		if rest, ok := strings.CutPrefix(v.Name(), recv+"."); ok && strings.HasPrefix(rest, partial) && !strings.Contains(rest, ".") {
			items = append(items, protocol.CompletionItem{Label: rest, Kind: protocol.CompletionItemKindVariable, Detail: v.Type().String(), Documentation: topLevelDetail(v.Name())})
		}
	}
	return dedupeItems(items), true
}

// topLevelDetail is what topLevel says of a variable.
func topLevelDetail(name string) string {
	for _, t := range topLevel {
		if t.name == name {
			return t.detail
		}
	}
	return ""
}

// siteEnv is the environment a site's expression compiles in: its own
// (when it compiled), else that of its policy's mutations (every variable
// declared), else the policy's environment with no variable.
func (a *Analysis) siteEnv(site *celSite) *cel.Env {
	cp := a.compiledOf(site)
	if e := a.expression(site); e != nil && e.Env() != nil {
		return e.Env()
	}
	hasParams := false
	if cp != nil {
		for j := len(cp.Mutations) - 1; j >= 0; j-- {
			if env := cp.Mutations[j].Env(); env != nil {
				return env
			}
		}
		hasParams = cp.HasParams
	}
	if a.comp == nil {
		return nil
	}
	env, err := a.comp.Env(hasParams)
	if err != nil {
		return nil
	}
	return env
}

// receiverBefore finds, before offset i of expr, the name being typed
// (partial) and the receiver expression before its dot: a chain of
// identifiers, selections, calls and indexes (authorizer.group('apps')).
func receiverBefore(expr []rune, i int) (recv, partial string, ok bool) {
	j := i
	for j > 0 && isIdentRune(expr[j-1]) {
		j--
	}
	partial = string(expr[j:i])
	if j == 0 || expr[j-1] != '.' {
		return "", partial, false
	}
	end := j - 1
	k := end
	for k > 0 {
		c := expr[k-1]
		switch {
		case isIdentRune(c) || c == '.':
			k--
		case c == ')' || c == ']':
			open := map[rune]rune{')': '(', ']': '['}[c]
			depth := 0
			for k > 0 {
				k--
				if expr[k] == c {
					depth++
				} else if expr[k] == open {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if depth != 0 {
				return "", partial, false
			}
		default:
			goto done
		}
	}
done:
	recv = strings.TrimLeft(string(expr[k:end]), ".")
	if recv == "" || !isIdentRune([]rune(recv)[0]) {
		return "", partial, false
	}
	return recv, partial, true
}
