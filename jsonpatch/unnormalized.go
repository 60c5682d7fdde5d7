package jsonpatch

import (
	"errors"
	"math"
	"unicode/utf8"
)

// ApplyUnnormalized is Apply without its first step, the normalization of
// the whole of doc (what the JSON encoding and decoding of doc would
// change), for callers that can check the result instead, as they walk it
// anyway. It returns ok=false whenever it cannot vouch for its result; the
// caller must then call Apply, for the result or the error.
//
// When ok is true, the result is Apply's result (reflect.DeepEqual, floats
// bit for bit) provided that IsNormalized(result) holds: every value of the
// result that comes from doc is then a fixed point of the normalization,
// and so is everything that came from the operations (their values are
// normalized as by Apply). When IsNormalized(result) does not hold, the
// result means nothing and the caller must call Apply.
//
// It answers ok=false for:
//   - a nil doc, and a result that is not a non-nil object;
//   - an operation other than "add", "remove" and "replace" ("test", "copy"
//     and "move" read or duplicate values of doc, which normalizing could
//     change), checked before anything is applied;
//   - any error, and any panic (Apply gives the exact error);
//   - a path through a nil map or slice, or through a value of another Go
//     type than map[string]any and []any (normalizing makes it a null or
//     converts it, so Apply could find something else there);
//   - a value of doc that an operation drops (remove, replace, add over an
//     existing key, replace of the root) which normalizing would refuse (a
//     NaN or infinite number, a value of another Go type than those JSON
//     decoding gives) or which holds a map with a key that is not valid
//     UTF-8 (normalizing renames such keys, possibly onto another key, which
//     could have changed what an earlier operation found in that map).
//
// Values of doc that no operation drops are in the result, so
// IsNormalized(result) vouches for them; the checks above cover the others.
// doc is never modified; the result shares with doc and the operations'
// values as Apply's does.
func ApplyUnnormalized(doc map[string]any, ops []Operation) (result map[string]any, ok bool) {
	result, _, ok = ApplyUnnormalizedOwn(doc, ops)
	return result, ok
}

// ApplyUnnormalizedOwn is ApplyUnnormalized, and tells whether the
// result's root map is this call's own (own): a map it made, that neither
// doc nor the operations' values hold, which the caller may write.
func ApplyUnnormalizedOwn(doc map[string]any, ops []Operation) (result map[string]any, own, ok bool) {
	if doc == nil {
		return nil, false, false
	}
	for i := range ops {
		kind, err := decodeQuoted(ops[i].Op)
		if err != nil {
			return nil, false, false
		}
		switch kind {
		case "add", "remove", "replace":
		default:
			return nil, false, false
		}
	}
	a := &applier{root: doc, unnormalized: true}
	defer func() {
		if r := recover(); r != nil {
			// Apply recovers or re-raises it.
			result, own, ok = nil, false, false
		}
	}()
	for i := range ops {
		if err := a.apply(&ops[i]); err != nil {
			return nil, false, false
		}
	}
	out, _ := a.finalize(a.root, true)
	r, isMap := out.(map[string]any)
	if !isMap || r == nil {
		return nil, false, false
	}
	return r, a.isOwned(mapID(r)), true
}

// errNotVouched stops ApplyUnnormalized at a value it cannot drop safely.
var errNotVouched = errors.New("jsonpatch: dropped value needs normalizing")

// discard is called with every value an operation drops from the document
// (nil for none). Under ApplyUnnormalized it fails unless discardable(v).
func (a *applier) discard(v any) error {
	if !a.unnormalized || discardable(v, 0) {
		return nil
	}
	return errNotVouched
}

// discardable reports whether dropping v, a value of an unnormalized
// document, leaves ApplyUnnormalized's run like Apply's: normalizing v would
// succeed (no NaN or infinite number, only the Go types of JSON decoding and
// nil maps and slices, at most maxDiscardDepth levels deep) and would rename
// no key of a map in it. Strings that are not valid UTF-8, whole floats and
// nil maps and slices are fine: Apply would change them and drop them all
// the same, and operations cannot have traversed nil containers (find
// refuses them).
func discardable(v any, depth int) bool {
	switch t := v.(type) {
	case nil, bool, int64, string, nullNode:
		return true
	case float64:
		return !math.IsNaN(t) && !math.IsInf(t, 0)
	case map[string]any:
		if depth >= maxDiscardDepth {
			return false
		}
		for k, e := range t {
			if !utf8.ValidString(k) || !discardable(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if depth >= maxDiscardDepth {
			return false
		}
		for _, e := range t {
			if !discardable(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// maxDiscardDepth bounds the walk of discardable (and of IsNormalized):
// deeper values are left to Apply.
const maxDiscardDepth = 10000

// IsNormalized reports whether v is a fixed point of the normalization
// Apply runs on its document (a JSON encoding and decoding): v is nil, a
// bool, an int64, a string that is valid UTF-8, a float64 for which
// IsNormalizedFloat holds, or a non-nil map[string]any with keys that are
// valid UTF-8 or a non-nil []any, holding such values (at most 10000 levels
// deep).
func IsNormalized(v any) bool {
	return isNormalized(v, 0)
}

func isNormalized(v any, depth int) bool {
	switch t := v.(type) {
	case nil, bool, int64:
		return true
	case string:
		return utf8.ValidString(t)
	case float64:
		return IsNormalizedFloat(t)
	case map[string]any:
		if t == nil || depth >= maxDiscardDepth {
			return false
		}
		for k, e := range t {
			if !utf8.ValidString(k) || !isNormalized(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if t == nil || depth >= maxDiscardDepth {
			return false
		}
		for _, e := range t {
			if !isNormalized(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// IsNormalizedFloat reports whether Apply keeps a float64 f of its document
// as it is: f is finite (NaN and infinities fail to encode), not zero (0
// decodes as an int64 0; Apply turns -0 into an int64 0 too) and not a whole
// number in the range of int64 (its JSON text decodes as an int64).
func IsNormalizedFloat(f float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
		return false
	}
	_, isInt := floatAsInt(f)
	return !isInt
}
