package compiler

import (
	"reflect"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"

	"github.com/mutatis-dev/mutatis/internal/celobject"
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
	// patches are where the JSONPatchVals filled in place are taken from,
	// sixteen to an allocation (celobject.Slab).
	patches celobject.Slab[mutation.JSONPatchVal]
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
		out := c.patches.New()
		*out = patch
		return out
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

// An `Object.<path>{…}` construction of an ApplyConfiguration's result
// built as a celobject.Object.
//
// cel-go builds every construction into a new map[string]ref.Val (the map
// and its group, ≈ 330 bytes for up to eight fields) that kube-apiserver's
// provider wraps in a dynamic.ObjectVal (mutation's ObjectType.Val); the
// ApplyConfiguration's reader then converts that map into a
// map[string]any for the merge (applyconfig.FromCEL). objectOnce evaluates
// the fields as evalObj.Exec does — in order, the first unknown or error
// returned as it is, an optional field's value unwrapped or, absent, left
// out, a non-optional value for an optional field cel-go's error — into a
// celobject.Object: the type the provider builds its values with (asked
// once, at planning) and the values by the construction's field names, in
// one allocation for up to four fields. The reader converts it straight
// into the merge's map.
//
// It is taken only where the value can reach nothing but that reader
// (outputObjectsOf): the root of an ApplyConfiguration expression, and,
// from a position taken, the fields (not optional ones) of an Object
// construction, the items of a list literal, the values of a map literal,
// the branches of a conditional and the items a map macro appends to its
// result (appendsOnly: `l.map(x, f)`, `l.map(x, p, f)`, transformList —
// the accumulator's `_+_` only copies them). A value bound to a variable, passed to
// a function, compared or iterated over is built by cel-go as before, so no
// dynamic.ObjectVal ever holds an Object and no operation other than the
// reader's ever sees one (each of its methods answers as the ObjectVal it
// stands for anyway: TestObjectIsUpstreams).
//
// The cost observer sees the step as it saw typeOnce's: a construction of
// the same ID, InitVals and object type (StructCreateBaseCost), the
// fields' own steps unchanged. TestObjectOnceIsCelGos holds values,
// errors, costs and budgets to cel-go's plan over random constructions;
// TestPlanOnceAgrees and FuzzPlanOnceAgrees hold the programs.
type objectOnce struct {
	interpreter.InterpretableConstructor
	// typ is the construction's type, asked once (see typeOnce).
	typ ref.Type
	// obj is the evalObj the construction is (read through its layout).
	obj *evalObjLayout
	// objType is the type the provider builds the construction's values
	// with.
	objType *celtypes.Type
	// objects are where the Objects are taken from, sixteen to an
	// allocation (celobject.Slab).
	objects celobject.Slab[celobject.Object]
}

// Type implements interpreter.InterpretableConstructor.
func (c *objectOnce) Type() ref.Type { return c.typ }

// Exec implements interpreter.InterpretableV2: evalObj.Exec (cel-go
// v0.29.2), the fields set in a celobject.Object instead of cel-go's map.
func (c *objectOnce) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	o := c.obj
	out := celobject.NewObjectIn(&c.objects, c.objType, o.fields)
	for i, field := range o.fields {
		val := o.vals[i].Exec(frame)
		if celtypes.IsUnknownOrError(val) {
			return val
		}
		if o.hasOptionals && o.optionals[i] {
			opt, ok := val.(*celtypes.Optional)
			if !ok {
				// interpreter.invalidOptionalEntryInit's error.
				return celtypes.LabelErrNode(o.id, celtypes.NewErr("cannot initialize optional entry '%v' from non-optional value %v", field, val))
			}
			if !opt.HasValue() {
				continue
			}
			val = opt.GetValue()
		}
		out.Set(i, val)
	}
	return out
}

// Eval implements interpreter.Interpretable, as evalObj.Eval does.
func (c *objectOnce) Eval(ctx interpreter.Activation) ref.Val {
	return c.Exec(interpreter.AsFrame(ctx))
}

// objectConstruction returns c (of type typ) as an objectOnce when it is
// cel-go's evalObj, its field names without a repeat, whose provider
// builds a dynamic.ObjectVal of the construction's fields as upstream's
// ObjectType.Val does; nil otherwise.
func objectConstruction(c interpreter.InterpretableConstructor, typ ref.Type) *objectOnce {
	if !celobject.Mirrored || !mirrorsEvalObj(reflect.TypeOf(c)) {
		return nil
	}
	obj := (*evalObjLayout)(reflect.ValueOf(c).UnsafePointer())
	if len(obj.fields) != len(obj.vals) || (obj.hasOptionals && len(obj.optionals) != len(obj.fields)) ||
		obj.provider == nil || typ.TypeName() != obj.typeName {
		return nil
	}
	for i, f := range obj.fields {
		for _, g := range obj.fields[:i] {
			if f == g {
				return nil
			}
		}
	}
	objType := buildsObject(obj.provider, obj.typeName)
	if objType == nil {
		return nil
	}
	return &objectOnce{InterpretableConstructor: c, typ: typ, obj: obj, objType: objType}
}

// buildsObject asks p for an object of type name with one field, and
// returns the type of the dynamic.ObjectVal it answers when that holds the
// field as given (the value upstream's ObjectType.Val builds); nil for any
// other answer.
func buildsObject(p celtypes.Provider, name string) *celtypes.Type {
	val := celtypes.String("v")
	fields := map[string]ref.Val{"f": val}
	ov, ok := p.NewValue(name, fields).(*dynamic.ObjectVal)
	if !ok || ov.Type().TypeName() != name {
		return nil
	}
	got := celobject.Fields(ov)
	if len(got) != 1 || got["f"] != val {
		return nil
	}
	t := celobject.TypeOf(ov)
	if t == nil || t.TypeName() != name {
		return nil
	}
	return t
}

// outputObjectsOf returns the IDs of the constructions of a, an
// expression of kind, whose value can only become (part of) what the
// expression's reader reads (see objectOnce), and of its list literals
// without optional items that can only become (part of) a field of an
// Object there (see listOnce); nil when there are none or kind is neither
// an ApplyConfiguration nor a JSONPatch. For an ApplyConfiguration that is
// its result (applyconfig.FromCELFresh reads it); for a JSONPatch, the
// value field of the JSONPatch constructions its result list holds
// (patchValuesOf: jsonpatch.FromCEL reads it).
func outputObjectsOf(a *cel.Ast, kind Kind) map[int64]bool {
	if a == nil || a.NativeRep() == nil {
		return nil
	}
	var ids map[int64]bool
	take := func(id int64) {
		if ids == nil {
			ids = map[int64]bool{}
		}
		ids[id] = true
	}
	// nested: e is (part of) a field of an Object, not the result itself.
	var visit func(e ast.Expr, nested bool)
	visit = func(e ast.Expr, nested bool) {
		switch e.Kind() {
		case ast.StructKind:
			take(e.ID())
			for _, f := range e.AsStruct().Fields() {
				if sf := f.AsStructField(); !sf.IsOptional() {
					visit(sf.Value(), true)
				}
			}
		case ast.ListKind:
			l := e.AsList()
			if nested && len(l.OptionalIndices()) == 0 {
				take(e.ID())
			}
			for i, item := range l.Elements() {
				if !l.IsOptional(int32(i)) {
					visit(item, nested)
				}
			}
		case ast.MapKind:
			for _, en := range e.AsMap().Entries() {
				if me := en.AsMapEntry(); !me.IsOptional() {
					visit(me.Value(), nested)
				}
			}
		case ast.CallKind:
			if c := e.AsCall(); c.FunctionName() == operators.Conditional && !c.IsMemberFunction() && len(c.Args()) == 3 {
				visit(c.Args()[1], nested)
				visit(c.Args()[2], nested)
			}
		case ast.ComprehensionKind:
			if c := e.AsComprehension(); appendsOnly(c) {
				visitAppended(c.LoopStep(), c.AccuVar(), func(item ast.Expr) { visit(item, nested) })
			}
		}
	}
	switch kind {
	case KindApplyConfiguration:
		visit(a.NativeRep().Expr(), false)
	case KindJSONPatch:
		// A list at the value's root is read as its items
		// (jsonpatch's refVals reads a celobject.ItemList): nested.
		patchValuesOf(a.NativeRep().Expr(), func(v ast.Expr) { visit(v, true) })
	}
	return ids
}

// patchValuesOf calls visit with the value of every JSONPatch construction
// that e, a JSONPatch expression's result, can only hold as an item of the
// list it is (and that jsonpatch.FromCEL alone reads then): in the items of
// a list literal, the branches of a conditional and the items a map macro
// appends (appendsOnly), the value given as a field that is not optional.
// Nothing reads a JSONPatchVal's value there but FromCEL: the list's
// construction and the map macro's `_+_` only copy the JSONPatch values,
// and the provider (mutation.JSONPatchType.Val, or jsonPatchOnce in its
// place) keeps the value as it is.
func patchValuesOf(e ast.Expr, visit func(ast.Expr)) {
	switch e.Kind() {
	case ast.ListKind:
		l := e.AsList()
		for i, item := range l.Elements() {
			if !l.IsOptional(int32(i)) {
				patchValuesOf(item, visit)
			}
		}
	case ast.CallKind:
		if c := e.AsCall(); c.FunctionName() == operators.Conditional && !c.IsMemberFunction() && len(c.Args()) == 3 {
			patchValuesOf(c.Args()[1], visit)
			patchValuesOf(c.Args()[2], visit)
		}
	case ast.ComprehensionKind:
		if c := e.AsComprehension(); appendsOnly(c) {
			visitAppended(c.LoopStep(), c.AccuVar(), func(item ast.Expr) { patchValuesOf(item, visit) })
		}
	case ast.StructKind:
		s := e.AsStruct()
		if s.TypeName() != mutation.JSONPatchTypeName {
			return
		}
		for _, f := range s.Fields() {
			if sf := f.AsStructField(); !sf.IsOptional() && sf.Name() == jsonPatchValueField {
				visit(sf.Value())
			}
		}
	}
}

// appendsOnly reports whether c is a comprehension whose result is its
// accumulator, a list that starts empty and to which its step only
// appends, with no loop condition but true: the shape of cel-go's map
// macros (`l.map(x, f)`, `l.map(x, p, f)`, transformList). Its result's
// items are then the appended values and nothing else reads them: the
// accumulator is read by the step's `_+_` only, which reads the size and
// the items of the appended list to copy them.
func appendsOnly(c ast.ComprehensionExpr) bool {
	accu := c.AccuVar()
	if init := c.AccuInit(); init.Kind() != ast.ListKind || len(init.AsList().Elements()) != 0 {
		return false
	}
	if r := c.Result(); r.Kind() != ast.IdentKind || r.AsIdent() != accu {
		return false
	}
	if cond := c.LoopCondition(); cond.Kind() != ast.LiteralKind || cond.AsLiteral() != celtypes.True {
		return false
	}
	return appendedOnly(c.LoopStep(), accu)
}

// appendedOnly reports whether step, the step of a comprehension whose
// accumulator is accu, is `accu`, `accu + [item]` (one item, not
// optional) or a conditional whose branches are either, its condition not
// reading accu.
func appendedOnly(step ast.Expr, accu string) bool {
	switch step.Kind() {
	case ast.IdentKind:
		return step.AsIdent() == accu
	case ast.CallKind:
		call := step.AsCall()
		args := call.Args()
		if call.FunctionName() == operators.Conditional && !call.IsMemberFunction() && len(args) == 3 {
			return !readsIdent(args[0], accu) && appendedOnly(args[1], accu) && appendedOnly(args[2], accu)
		}
		if _, ok := appendedList(step, accu); ok {
			return !readsIdent(args[1], accu)
		}
	}
	return false
}

// visitAppended visits the items step (appendedOnly) appends.
func visitAppended(step ast.Expr, accu string, visit func(ast.Expr)) {
	if step.Kind() != ast.CallKind {
		return
	}
	args := step.AsCall().Args()
	if step.AsCall().FunctionName() == operators.Conditional {
		visitAppended(args[1], accu, visit)
		visitAppended(args[2], accu, visit)
		return
	}
	visit(args[1])
}

// readsIdent reports whether e reads the identifier name: anywhere but
// where a comprehension binds name itself (its accumulator or an
// iteration variable, in its condition, step and result).
func readsIdent(e ast.Expr, name string) bool {
	switch e.Kind() {
	case ast.IdentKind:
		return e.AsIdent() == name
	case ast.SelectKind:
		return readsIdent(e.AsSelect().Operand(), name)
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() && readsIdent(c.Target(), name) {
			return true
		}
		return slices.ContainsFunc(c.Args(), func(a ast.Expr) bool { return readsIdent(a, name) })
	case ast.ListKind:
		return slices.ContainsFunc(e.AsList().Elements(), func(a ast.Expr) bool { return readsIdent(a, name) })
	case ast.MapKind:
		return slices.ContainsFunc(e.AsMap().Entries(), func(en ast.EntryExpr) bool {
			me := en.AsMapEntry()
			return readsIdent(me.Key(), name) || readsIdent(me.Value(), name)
		})
	case ast.StructKind:
		return slices.ContainsFunc(e.AsStruct().Fields(), func(en ast.EntryExpr) bool {
			return readsIdent(en.AsStructField().Value(), name)
		})
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		if readsIdent(c.IterRange(), name) || readsIdent(c.AccuInit(), name) {
			return true
		}
		if c.AccuVar() == name || c.IterVar() == name || c.IterVar2() == name {
			return false
		}
		return readsIdent(c.LoopCondition(), name) || readsIdent(c.LoopStep(), name) || readsIdent(c.Result(), name)
	}
	return false
}

// objectOnceFor returns the decorator that plans the constructions of ids
// (from outputObjectsOf), which planOnce planned as typeOnce, as
// objectOnce, and its list literals as listOnce (outputList, with
// adapter, the environment's); nil when there are none.
func objectOnceFor(ids map[int64]bool, adapter celtypes.Adapter) interpreter.InterpretableDecoratorV2 {
	if len(ids) == 0 {
		return nil
	}
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		if !ids[i.ID()] {
			return i, nil
		}
		if l := outputList(i, adapter); l != nil {
			return l, nil
		}
		t, ok := i.(*typeOnce)
		if !ok {
			return i, nil
		}
		if o := objectConstruction(t.InterpretableConstructor, t.typ); o != nil {
			return o, nil
		}
		return i, nil
	}
}
