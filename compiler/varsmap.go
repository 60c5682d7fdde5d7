package compiler

import (
	"fmt"
	"reflect"
	"sync"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/lazy"
)

// The `variables` of an activation, as k8s.io/apiserver's lazy.MapValue
// (v0.37.1, pkg/cel/lazy) presents them, without its cost.
//
// kube-apiserver binds `variables` to a lazy.MapValue built for every
// evaluation: the struct, two maps, a type value and the names' slice, then
// a map entry per variable appended and per variable evaluated, six to ten
// allocations; and every `variables.x` it resolves runs cel.Unescape on
// the name (a regular expression's ReplaceAllStringFunc) and looks it up in
// both maps. varsMap answers every method as that MapValue does, with the
// names' table made once per policy (varsTable): one allocation a use for
// up to varsInline variables, a name that needs no unescaping found by
// comparing strings, and the values held by index. A policy of more than
// 64 variables keeps lazy.MapValue (varsTable is nil).
//
// The type value is the policy's, made once, where lazy.NewMapValue makes
// one per map: the same name and traits, and an expression sees only one
// variables map, so nothing it can do tells the two apart (ConvertToType
// compares the type pointer with the map's own, which it gets only from
// that map). TestVarsMapIsLazyMapValue holds varsMap to lazy.MapValue
// method by method.
type varsMap struct {
	a     *Activation
	table *varsTable
	// done has bit i set once variable slot i is evaluated (its value in
	// vals, kept as lazy.MapValue keeps it, even a nil one).
	done   uint64
	vals   []ref.Val
	inline [varsInline]ref.Val
}

// varsInline is how many values a varsMap holds without a second
// allocation.
const varsInline = 4

var (
	_ ref.Val       = (*varsMap)(nil)
	_ traits.Mapper = (*varsMap)(nil)
)

// varsTable is what a policy's varsMaps share: the variables' names as
// lazy.MapValue.Append receives them, each with the slot of its value
// (names repeated share one: the map's last callback serves them).
type varsTable struct {
	typ *celtypes.Type
	// names are the variables' names in policy order (knownValues).
	names []string
	// plain tells names[i] is cel.Unescape's own result: a key equal to
	// it is found without unescaping.
	plain []bool
	// slot is the value slot of names[i]; slots counts them.
	slot  []int
	slots int
	// bySlot is, per slot, the index of the variable that evaluates it
	// (the last of its name), and byName the slot of every name.
	bySlot []int
	byName map[string]int
}

// newVarsTable builds the table of vars, named after typ (the policy's
// variables type), or nil when there are more than 64 slots.
func newVarsTable(typ ref.Type, vars []*Expression) *varsTable {
	t := &varsTable{
		typ:    celtypes.NewTypeValue(typ.TypeName(), traits.IndexerType|traits.FieldTesterType|traits.IterableType),
		byName: make(map[string]int, len(vars)),
	}
	for i, v := range vars {
		s, seen := t.byName[v.Name]
		if !seen {
			s = t.slots
			t.slots++
			t.byName[v.Name] = s
			t.bySlot = append(t.bySlot, i)
		}
		t.bySlot[s] = i // the last callback of a name is the map's
		un, ok := apiservercel.Unescape(v.Name)
		t.names = append(t.names, v.Name)
		t.plain = append(t.plain, ok && un == v.Name)
		t.slot = append(t.slot, s)
	}
	if t.slots > 64 {
		return nil
	}
	return t
}

// varsOf returns the policy's varsTable, built on first use (nil: use
// lazy.MapValue).
func (p *Policy) varsOf() *varsTable {
	p.varsOnce.Do(func() {
		if p.varType != nil {
			p.vars = newVarsTable(p.varType, p.Variables)
		}
	})
	return p.vars
}

// varsState is the Policy's lazily built varsTable.
type varsState struct {
	varsOnce sync.Once
	vars     *varsTable
}

// newVarsMap is the variables map of one use of a.
func newVarsMap(a *Activation, t *varsTable) *varsMap {
	m := &varsMap{a: a, table: t}
	if t.slots <= varsInline {
		m.vals = m.inline[:t.slots]
	} else {
		m.vals = make([]ref.Val, t.slots)
	}
	return m
}

// slotOf is the slot of the variable key names, as lazy.MapValue.Find
// finds it (cel.Unescape, then the name), or -1.
func (t *varsTable) slotOf(key string) int {
	for i, n := range t.names {
		if t.plain[i] && n == key {
			return t.slot[i]
		}
	}
	name, ok := apiservercel.Unescape(key)
	if !ok {
		return -1
	}
	if s, ok := t.byName[name]; ok {
		return s
	}
	return -1
}

// resolve is lazy.MapValue.resolveField of slot s: the kept value, or the
// variable evaluated (against the activation only while m is its current
// map, evalVariable's getter's error otherwise) and kept.
func (m *varsMap) resolve(s int) ref.Val {
	if m.done&(1<<s) != 0 {
		return m.vals[s]
	}
	v := m.a.policy.Variables[m.table.bySlot[s]]
	var out ref.Val
	if m.a.variables != ref.Val(m) {
		out = celtypes.NewErr("internal error: variable %q resolved after its activation was released", v.Name)
	} else {
		out = m.a.evalVariable(v)
	}
	m.vals[s] = out
	m.done |= 1 << s
	return out
}

// Find implements traits.Mapper, as lazy.MapValue's.
func (m *varsMap) Find(key ref.Val) (ref.Val, bool) {
	n, ok := key.(celtypes.String)
	if !ok {
		return celtypes.MaybeNoSuchOverloadErr(n), true
	}
	s := m.table.slotOf(string(n))
	if s < 0 {
		return nil, false
	}
	return m.resolve(s), true
}

// Get implements traits.Mapper, as lazy.MapValue's.
func (m *varsMap) Get(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if found {
		return v
	}
	return celtypes.ValOrErr(key, "no such key: %v", key)
}

// Contains implements traits.Mapper, as lazy.MapValue's.
func (m *varsMap) Contains(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if v != nil && celtypes.IsUnknownOrError(v) {
		return v
	}
	return celtypes.Bool(found)
}

// Iterator implements traits.Mapper, as lazy.MapValue's: the names in
// policy order (repeats included), each yielding Get of its name.
func (m *varsMap) Iterator() traits.Iterator { return &varsIterator{m: m} }

// Size implements traits.Mapper: the distinct names, as lazy.MapValue's.
func (m *varsMap) Size() ref.Val { return celtypes.Int(m.table.slots) }

// ConvertToNative implements ref.Val, as lazy.MapValue's: disallowed.
func (m *varsMap) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("disallowed conversion from %q to %q", m.table.typ.TypeName(), typeDesc.Name())
}

// ConvertToType implements ref.Val, as lazy.MapValue's.
func (m *varsMap) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case m.table.typ:
		return m
	case celtypes.TypeType:
		return m.table.typ
	}
	return celtypes.NewErr("disallowed conversion from %q to %q", m.table.typ.TypeName(), typeVal.TypeName())
}

// Equal implements ref.Val, as lazy.MapValue's: the same map only.
func (m *varsMap) Equal(other ref.Val) ref.Val {
	o, ok := other.(*varsMap)
	if !ok {
		return celtypes.MaybeNoSuchOverloadErr(other)
	}
	return celtypes.Bool(m == o)
}

// Type implements ref.Val.
func (m *varsMap) Type() ref.Type { return m.table.typ }

// Value implements ref.Val, as lazy.MapValue's: not allowed.
func (m *varsMap) Value() any { return celtypes.NoSuchOverloadErr() }

// varsIterator is lazy.MapValue's iterator over a varsMap.
type varsIterator struct {
	m     *varsMap
	index int
}

func (i *varsIterator) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("disallowed conversion to %q", typeDesc.Name())
}

func (i *varsIterator) ConvertToType(typeValue ref.Type) ref.Val {
	return celtypes.NewErr("disallowed conversion o %q", typeValue.TypeName())
}

func (i *varsIterator) Equal(other ref.Val) ref.Val {
	o, ok := other.(*varsIterator)
	if !ok {
		return celtypes.MaybeNoSuchOverloadErr(other)
	}
	return celtypes.Bool(o == i)
}

func (i *varsIterator) Type() ref.Type { return celtypes.IteratorType }

func (i *varsIterator) Value() any { return nil }

func (i *varsIterator) HasNext() ref.Val {
	return celtypes.Bool(i.index < len(i.m.table.names))
}

func (i *varsIterator) Next() ref.Val {
	ret := i.m.Get(celtypes.String(i.m.table.names[i.index]))
	i.index++
	return ret
}

// lazyVars is the reference: lazy.MapValue of the policy's variables, as
// before varsMap (and for a policy of more than 64 variables).
func (a *Activation) lazyVars() *lazy.MapValue {
	if a.getters == nil {
		a.getters = make([]lazy.GetFieldFunc, len(a.policy.Variables))
		for i, v := range a.policy.Variables {
			a.getters[i] = func(m *lazy.MapValue) ref.Val {
				if ref.Val(m) != a.variables {
					return celtypes.NewErr("internal error: variable %q resolved after its activation was released", v.Name)
				}
				return a.evalVariable(v)
			}
		}
	}
	m := lazy.NewMapValue(a.policy.varType)
	for i, v := range a.policy.Variables {
		m.Append(v.Name, a.getters[i])
	}
	return m
}
