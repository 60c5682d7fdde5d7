package costs

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/mutatis-dev/mutatis/costs/internal/kindschema"
)

// builtinDeclType returns the CEL declaration type of a built-in kind as
// Kubernetes 1.37.1 builds it to type-check admission policies:
// common.SchemaDeclType of the kind's OpenAPI schema (the definitions
// kube-controller-manager's type checker resolves, embedded by
// costs/internal/kindschema), sized from the 3 MiB request where the
// schema declares no limit. Those definitions declare required fields,
// defaults and string enums: a list is bounded by the smallest form of
// its items (required fields without a default), a string with an enum
// by its longest value, a date-time by the longest timestamp. nil when
// gvk has no definition.
func builtinDeclType(defs *kindschema.Definitions, gvk schema.GroupVersionKind) *apiservercel.DeclType {
	if defs == nil {
		return nil
	}
	d, err := defs.DeclType(gvk)
	if err != nil {
		return nil
	}
	return d
}
