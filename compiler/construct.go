package compiler

import (
	"reflect"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apiserver/pkg/cel/mutation"
)

// A `JSONPatch{…}` construction built straight into its value.
//
// cel-go builds every `T{field: …}` construction (evalObj.Exec) by
// evaluating the fields into a new map[string]ref.Val (two allocations:
// the map and its group) and handing the map to the type provider
// (Provider.NewValue). For JSONPatch, kube-apiserver's provider
// (mutation.JSONPatchType.Val) reads the map once into a
// mutation.JSONPatchVal — op, path and from as the strings their values'
// Value() box (one allocation each), value as it is — and drops it. A
// JSON patch mutation builds one per operation.
//
// jsonPatchOnce evaluates the fields as evalObj does, in order, stopping at
// the first unknown or error, and fills the JSONPatchVal itself when every
// op, path and from is a types.String (the checker types them string; only
// a dyn value can be something else) and no other field name appears.
// Otherwise it hands the values to the provider as evalObj does, so that
// whatever upstream's Val answers (its error for a value of another type or
// a field of another name) is the answer. The construction's cost is
// charged by the cost observer on its type alone (StructCreateBaseCost for
// any object type) and on the fields' own steps, which are the same.
// TestJSONPatchOnceIsTheProviders holds the values to the provider's on
// every combination of fields, types and errors; TestPlanOnceAgrees and
// FuzzPlanOnceAgrees the programs to cel-go's own plan.
type jsonPatchOnce struct {
	interpreter.InterpretableConstructor
	// typ is the construction's type, asked once (see typeOnce).
	typ ref.Type
	// obj is the evalObj the construction is (read through its layout).
	obj *evalObjLayout
}

// evalObjLayout mirrors the fields of cel-go v0.29.2's interpreter.evalObj
// (interpreter/interpretable.go), which are unexported: the construction's
// field names are not part of InterpretableConstructor. mirrorsEvalObj
// checks the layout before any is read through it.
type evalObjLayout struct {
	id           int64
	typeName     string
	fields       []string
	vals         []interpreter.InterpretableV2
	optionals    []bool
	hasOptionals bool
	provider     celtypes.Provider
}

// mirrorsEvalObj tells whether t is *interpreter.evalObj laid out as
// evalObjLayout: same field names, types and offsets.
func mirrorsEvalObj(t reflect.Type) bool {
	if t.Kind() != reflect.Pointer {
		return false
	}
	real, mirror := t.Elem(), reflect.TypeFor[evalObjLayout]()
	if real.Name() != "evalObj" || real.PkgPath() != "github.com/google/cel-go/interpreter" ||
		real.NumField() != mirror.NumField() || real.Size() != mirror.Size() {
		return false
	}
	for i := range real.NumField() {
		r, m := real.Field(i), mirror.Field(i)
		if r.Name != m.Name || r.Type != m.Type || r.Offset != m.Offset {
			return false
		}
	}
	return true
}

// JSONPatch's field names (mutation's are unexported).
const (
	jsonPatchOpField    = "op"
	jsonPatchPathField  = "path"
	jsonPatchFromField  = "from"
	jsonPatchValueField = "value"
)

// maxJSONPatchFields bounds the fields of a construction jsonPatchOnce
// takes (JSONPatch has four; a construction naming more is left to cel-go).
const maxJSONPatchFields = 4

// jsonPatchConstruction returns c as a jsonPatchOnce when it is cel-go's
// evalObj of a JSONPatch without optional fields whose provider builds a
// JSONPatch as upstream's JSONPatchType.Val does; nil otherwise.
func jsonPatchConstruction(c interpreter.InterpretableConstructor, typ ref.Type) *jsonPatchOnce {
	if typ.TypeName() != mutation.JSONPatchTypeName || !mirrorsEvalObj(reflect.TypeOf(c)) {
		return nil
	}
	obj := (*evalObjLayout)(reflect.ValueOf(c).UnsafePointer())
	if obj.hasOptionals || len(obj.fields) > maxJSONPatchFields || len(obj.fields) != len(obj.vals) ||
		obj.typeName != mutation.JSONPatchTypeName || obj.provider == nil || !buildsJSONPatch(obj.provider) {
		return nil
	}
	return &jsonPatchOnce{InterpretableConstructor: c, typ: typ, obj: obj}
}

// buildsJSONPatch asks p for a JSONPatch of every field, and of none, and
// tells whether it answers what upstream's JSONPatchType.Val does.
func buildsJSONPatch(p celtypes.Provider) bool {
	val := celtypes.String("v")
	full, ok := p.NewValue(mutation.JSONPatchTypeName, map[string]ref.Val{
		jsonPatchOpField: celtypes.String("o"), jsonPatchPathField: celtypes.String("p"),
		jsonPatchFromField: celtypes.String("f"), jsonPatchValueField: val,
	}).(*mutation.JSONPatchVal)
	if !ok || full.Op != "o" || full.Path != "p" || full.From != "f" || full.Val != val {
		return false
	}
	empty, ok := p.NewValue(mutation.JSONPatchTypeName, map[string]ref.Val{}).(*mutation.JSONPatchVal)
	return ok && *empty == mutation.JSONPatchVal{}
}

// Type implements interpreter.InterpretableConstructor.
func (c *jsonPatchOnce) Type() ref.Type { return c.typ }

// Exec implements interpreter.InterpretableV2: evalObj.Exec (cel-go
// v0.29.2) without optional fields, the JSONPatchVal filled in place of
// the provider's reading of the map when it can be.
func (c *jsonPatchOnce) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	o := c.obj
	var vals [maxJSONPatchFields]ref.Val
	patch := mutation.JSONPatchVal{}
	direct := true
	for i, field := range o.fields {
		val := o.vals[i].Exec(frame)
		if celtypes.IsUnknownOrError(val) {
			return val
		}
		vals[i] = val
		if !direct {
			continue
		}
		s, isString := val.(celtypes.String)
		switch {
		case field == jsonPatchOpField && isString:
			patch.Op = string(s)
		case field == jsonPatchPathField && isString:
			patch.Path = string(s)
		case field == jsonPatchFromField && isString:
			patch.From = string(s)
		case field == jsonPatchValueField:
			patch.Val = val
		default:
			direct = false
		}
	}
	if direct {
		return &patch
	}
	fieldVals := make(map[string]ref.Val, len(o.fields))
	for i, field := range o.fields {
		fieldVals[field] = vals[i]
	}
	return celtypes.LabelErrNode(o.id, o.provider.NewValue(o.typeName, fieldVals))
}

// Eval implements interpreter.Interpretable, as evalObj.Eval does.
func (c *jsonPatchOnce) Eval(ctx interpreter.Activation) ref.Val {
	return c.Exec(interpreter.AsFrame(ctx))
}
