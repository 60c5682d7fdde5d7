package scheme

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/jsonpatch"
)

// Incremental defaulting told what changed: after a JSON patch, the
// operations' paths name every field the patch can have written, so the
// fields DefaultFrom's one diff (inertKind.changes) would compare are
// those alone; the others are the base's own values (the patch shares
// what it did not write, and the strict decode returns a defaulted
// object's unwritten fields as they are). DefaultPatched compares only the
// told fields (changesTold) and then goes on as DefaultFrom.
// TestDefaultPatchedIsDefaultFrom holds the two, and the whole object's
// defaulting, equal on real objects under random patches.

// DefaultPatched is DefaultFrom(obj, base, gvk) for obj, the result of
// PatchFrom (or Patch) of ops applied to base: the differences DefaultFrom
// looks for are looked for only in the top-level fields, and the fields of
// metadata and spec, that ops' paths (and a move's from) name. Patches
// whose paths it cannot read that way (the root, more than a few fields)
// go through DefaultFrom's diff of the whole object.
func (s *Scheme) DefaultPatched(obj, base map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (map[string]any, error) {
	var buf [maxChanges]fieldChange
	told, ok := toldFields(ops, buf[:0])
	if !ok {
		told = nil
	}
	return s.defaultFrom(obj, base, gvk, told, ok)
}

// toldFields appends to out the fields ops write, each as the first two
// steps of its JSON pointer (a fieldChange: sub empty when the pointer
// names the top-level field itself), once each; ok=false when a pointer
// is the root or not one, a step is escaped (~), an operation is not one
// of RFC 6902's, or there are more than maxChanges fields.
func toldFields(ops []jsonpatch.Operation, out []fieldChange) (_ []fieldChange, ok bool) {
	for i := range ops {
		op := &ops[i]
		paths, n := [2]string{op.Path, op.From}, 1
		switch op.Op {
		case "test":
			continue // writes nothing
		case "add", "remove", "replace", "copy":
		case "move":
			n = 2 // removes from
		default:
			return nil, false
		}
		for _, p := range paths[:n] {
			c, ok := toldField(p)
			if !ok {
				return nil, false
			}
			if out, ok = addTold(out, c); !ok {
				return nil, false
			}
		}
	}
	return out, true
}

// addTold appends c to told unless it is there already; ok=false when
// told is full.
func addTold(told []fieldChange, c fieldChange) (_ []fieldChange, ok bool) {
	for _, t := range told {
		if t == c {
			return told, true
		}
	}
	if len(told) == maxChanges {
		return nil, false
	}
	return append(told, c), true
}

// toldField is the field JSON pointer p writes: its first step, and its
// second (or none when p has one step, or a second step that is empty: the
// first as a whole then).
func toldField(p string) (fieldChange, bool) {
	if len(p) < 2 || p[0] != '/' {
		return fieldChange{}, false // the root: not told
	}
	top, rest, _ := strings.Cut(p[1:], "/")
	sub, _, _ := strings.Cut(rest, "/")
	if strings.IndexByte(top, '~') >= 0 || strings.IndexByte(sub, '~') >= 0 {
		return fieldChange{}, false
	}
	return fieldChange{top, sub}, true
}

// changesTold is k.changes(obj, base, out) for obj that differs from base
// in told's fields at most (toldFields of the patch that made obj of
// base): only those fields are compared, as changes compares them — a
// field told as a whole (sub empty) field by field below it as changes
// looks, a field told in some of its fields in those alone.
func (k *inertKind) changesTold(obj, base map[string]any, told []fieldChange, out []fieldChange) (_ []fieldChange, all bool) {
	all = true
	add := func(c fieldChange) bool { // as changes adds
		all = all && len(out) < maxChanges
		if all {
			out = append(out, c)
		}
		return all
	}
	for i, t := range told {
		if toldBefore(told[:i], t.top) {
			continue // compared with its first mention
		}
		whole := toldWhole(told, t.top)
		fields := k.nested[t.top]
		deep := false
		deeper := func(f string, v, b any) (same, differs bool) {
			vm, ok1 := v.(map[string]any)
			bm, ok2 := b.(map[string]any)
			if fields == nil || !ok1 || !ok2 || vm == nil || bm == nil {
				return false, false
			}
			n := len(out)
			if whole {
				diffFields(vm, bm, fields, noDeeper, nil, func(sub string) bool { return add(fieldChange{f, sub}) })
			} else {
				for _, c := range told[i:] {
					if c.top != f {
						continue
					}
					sv, inObj := vm[c.sub]
					sb, inBase := bm[c.sub]
					if fieldDiffers(c.sub, sv, inObj, sb, inBase, fields, noDeeper) && !add(fieldChange{f, c.sub}) {
						break
					}
				}
			}
			deep = len(out) > n
			return len(out) == n && all, deep
		}
		v, inObj := obj[t.top]
		b, inBase := base[t.top]
		if fieldDiffers(t.top, v, inObj, b, inBase, k.top, deeper) && !deep && !add(fieldChange{t.top, ""}) {
			break
		}
		if !all {
			break
		}
	}
	return out, all
}

// toldBefore tells whether told names top-level field top.
func toldBefore(told []fieldChange, top string) bool {
	for _, t := range told {
		if t.top == top {
			return true
		}
	}
	return false
}

// toldWhole tells whether told names top-level field top as a whole.
func toldWhole(told []fieldChange, top string) bool {
	for _, t := range told {
		if t.top == top && t.sub == "" {
			return true
		}
	}
	return false
}
