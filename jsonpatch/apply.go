package jsonpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Errors shared with gopkg.in/evanphx/json-patch.v4, so that errors.Is works
// with either package's sentinels.
var (
	// ErrTestFailed is wrapped by the error of a failed "test" operation.
	// kube-apiserver leaves the object unchanged and reports no error then.
	ErrTestFailed = evanphx.ErrTestFailed
	// ErrMissing is wrapped by errors about missing paths, keys and fields.
	ErrMissing = evanphx.ErrMissing
	// ErrInvalidIndex is wrapped by errors about out-of-range array indexes.
	ErrInvalidIndex = evanphx.ErrInvalidIndex
)

// ErrUpstreamPanic is wrapped by the error Apply returns for a patch on which
// evanphx/json-patch v4 panics (for example writing below a value that an
// earlier operation set to null, or a "test" comparing arrays that hold
// nulls). kube-apiserver recovers such a panic as an internal error of the
// whole request; Apply reports it as an ordinary error instead.
var ErrUpstreamPanic = errors.New("JSON patch library would panic")

// AccumulatedCopySizeLimit is the limit Apply puts on the total size in
// bytes of the JSON encoding of the values duplicated by "copy" operations
// of one patch: evanphx's AccumulatedCopySizeLimit as kube-apiserver
// configures it (--json-patch-max-copy-bytes, default 3 MiB). A constant,
// not evanphx's process-wide variable: nothing a run does can change it.
const AccumulatedCopySizeLimit int64 = 3 * 1024 * 1024

// NotObjectError is returned by Apply when a "replace" of the root ("") left
// an array at the root. JSON holds the patched document as evanphx would
// have produced it; pass it to DecodeJSON to obtain kube-apiserver's error.
type NotObjectError struct {
	JSON []byte
}

// Error implements error with the text of decoding an array into a map.
func (e *NotObjectError) Error() string {
	var m map[string]any
	if err := utiljson.Unmarshal(e.JSON, &m); err != nil {
		return err.Error()
	}
	return "patched document is not an object"
}

// nullNode is a null that came from an operation's value. evanphx keeps it as
// a non-nil node holding the raw text "null", which behaves unlike a null of
// the document: it equals {} and [] in "test", it can be traversed as an
// empty object, and writing below it panics. nil in a container is a
// document null (a nil node in evanphx).
type nullNode struct{}

// MarshalJSON encodes the node as null, for copy size accounting.
func (nullNode) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// Apply applies ops to doc with the semantics, results and error texts of
// gopkg.in/evanphx/json-patch.v4 Patch.Apply on the JSON encoding of doc,
// followed by decoding the result with k8s.io/apimachinery/pkg/util/json.
// Integers in the result are int64, other numbers float64.
//
// doc is never modified. The result shares the containers that no operation
// wrote to with doc and with the operations' values, so it must be treated as
// read-only (or deep-copied) too.
//
// A failed "test" returns an error matching ErrTestFailed.
func Apply(doc map[string]any, ops []Operation) (result map[string]any, err error) {
	return applyLimited(doc, ops, AccumulatedCopySizeLimit)
}

// applyLimited is Apply with copyLimit in place of AccumulatedCopySizeLimit
// (zero or less: no limit).
func applyLimited(doc map[string]any, ops []Operation, copyLimit int64) (result map[string]any, err error) {
	a := &applier{copyLimit: copyLimit}
	root, _, err := a.normalize(doc)
	if err != nil {
		return nil, fmt.Errorf("failed to create JSON patch: %w", err)
	}
	a.root = root
	if doc == nil {
		// json.Marshal(nil map) is "null", which evanphx reads into a nil
		// partialDoc: an empty object that panics on writes.
		a.root, a.fixup = nullNode{}, true
	}
	defer func() {
		if r := recover(); r != nil {
			if pe, ok := r.(upstreamPanic); ok {
				result, err = nil, fmt.Errorf("%w: %s", ErrUpstreamPanic, string(pe))
				return
			}
			panic(r)
		}
	}()
	for i := range ops {
		if err := a.apply(&ops[i]); err != nil {
			return nil, err
		}
	}
	out, _ := a.finalize(a.root, true)
	switch r := out.(type) {
	case map[string]any:
		return r, nil
	case nil:
		// A nil-map root marshals as null, which decodes into a nil map.
		return nil, nil
	default:
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		return nil, &NotObjectError{JSON: b}
	}
}

// upstreamPanic carries the runtime error evanphx would panic with.
type upstreamPanic string

func panicLikeUpstream(msg string) {
	panic(upstreamPanic(msg))
}

type applier struct {
	root any
	// ownedFew and then owned hold the identities (mapID, sliceID) of the
	// maps and slices this Apply call made: see isOwned.
	ownedFew  [32]uintptr
	nOwnedFew int
	owned     map[uintptr]struct{}
	copySize  int64
	copyLimit int64
	// fixup is set when the result may hold a nullNode or a float -0,
	// which the final decode turns into nil and int64 0.
	fixup bool
	// unnormalized is set for ApplyUnnormalized: the document was not
	// normalized, so find refuses nil containers and the values operations
	// drop are checked with discardable.
	unnormalized bool
}

// container is where a path's last segment lives, as evanphx's findObject
// returns it.
type container struct {
	kind int // cMap, cArray or cNullDoc
	m    map[string]any
	s    []any
	// The owner of an array, to store the new slice after add and remove.
	parentMap   map[string]any
	parentKey   string
	parentSlice []any
	parentIdx   int
}

const (
	cMap = iota
	cArray
	cNullDoc // a nullNode traversed as an object: evanphx's nil partialDoc
)

func (a *applier) apply(op *Operation) error {
	kind, kerr := decodeQuoted(op.Op)
	if kerr != nil {
		kind = "unknown"
	}
	switch kind {
	case "add":
		return a.add(op)
	case "remove":
		return a.remove(op)
	case "replace":
		return a.replace(op)
	case "move":
		return a.move(op)
	case "test":
		return a.test(op)
	case "copy":
		return a.copyOp(op)
	default:
		return fmt.Errorf("Unexpected kind: %s", kind)
	}
}

// decodeQuoted reproduces upstream's json.Unmarshal(strconv.Quote(s)): Quote
// may produce escapes that are not JSON (\a, \v, \x.., \U...).
func decodeQuoted(s string) (string, error) {
	safe := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			safe = false
			break
		}
	}
	if safe {
		return s, nil
	}
	var out string
	if err := json.Unmarshal([]byte(strconv.Quote(s)), &out); err != nil {
		return "unknown", err
	}
	return out, nil
}

func (op *Operation) path() (string, error) { return decodeQuoted(op.Path) }

func (op *Operation) from() (string, error) {
	if len(op.From) == 0 {
		return "unknown", fmt.Errorf("operation, missing from field: %w", ErrMissing)
	}
	return decodeQuoted(op.From)
}

// value returns the node evanphx builds for the operation's value: nil when
// absent, nullNode for null.
func (a *applier) value(op *Operation) (any, error) {
	if !op.HasValue {
		return nil, nil
	}
	if op.Value == nil {
		a.fixup = true
		return nullNode{}, nil
	}
	v, _, err := a.normalize(op.Value)
	if err != nil {
		return nil, fmt.Errorf("invalid value: %w", err)
	}
	return v, nil
}

func (a *applier) add(op *Operation) error {
	path, err := op.path()
	if err != nil {
		return fmt.Errorf("add operation failed to decode path: %w", ErrMissing)
	}
	con, key, ok := a.find(path, true)
	if !ok {
		return fmt.Errorf("add operation does not apply: doc is missing path: \"%s\": %w", path, ErrMissing)
	}
	val, err := a.value(op)
	if err != nil {
		return err
	}
	if err := a.conAdd(&con, key, val); err != nil {
		return fmt.Errorf("error in add for path: '%s': %w", path, err)
	}
	return nil
}

func (a *applier) remove(op *Operation) error {
	path, err := op.path()
	if err != nil {
		return fmt.Errorf("remove operation failed to decode path: %w", ErrMissing)
	}
	con, key, ok := a.find(path, true)
	if !ok {
		return fmt.Errorf("remove operation does not apply: doc is missing path: \"%s\": %w", path, ErrMissing)
	}
	if err := a.conRemove(&con, key); err != nil {
		return fmt.Errorf("error in remove for path: '%s': %w", path, err)
	}
	return nil
}

func (a *applier) replace(op *Operation) error {
	path, err := op.path()
	if err != nil {
		return fmt.Errorf("replace operation failed to decode path: %w", err)
	}
	if path == "" {
		val, verr := a.value(op)
		if verr != nil {
			return verr
		}
		switch v := val.(type) {
		case nil:
			panicLikeUpstream("replace of the root without a value: invalid memory address or nil pointer dereference")
		case nullNode, map[string]any, []any:
			if err := a.discard(a.root); err != nil {
				return err
			}
			a.root = v
		default:
			// err is nil here; upstream formats it with %w all the same.
			return fmt.Errorf("replace operation value must be object or array: %w", err)
		}
		return nil
	}
	con, key, ok := a.find(path, true)
	if !ok {
		return fmt.Errorf("replace operation does not apply: doc is missing path: %s: %w", path, ErrMissing)
	}
	old, err := conGet(&con, key)
	if err != nil {
		return fmt.Errorf("replace operation does not apply: doc is missing key: %s: %w", path, ErrMissing)
	}
	val, err := a.value(op)
	if err != nil {
		return err
	}
	if err := a.discard(old); err != nil {
		return err
	}
	switch con.kind {
	case cNullDoc:
		panicLikeUpstream("assignment to entry in nil map")
	case cMap:
		con.m[key] = val
	case cArray:
		idx, _ := strconv.Atoi(key)
		if idx < 0 {
			idx += len(con.s)
		}
		con.s[idx] = val
	}
	return nil
}

func (a *applier) move(op *Operation) error {
	from, err := op.from()
	if err != nil {
		return fmt.Errorf("move operation failed to decode from: %w", err)
	}
	con, key, ok := a.find(from, true)
	if !ok {
		return fmt.Errorf("move operation does not apply: doc is missing from path: %s: %w", from, ErrMissing)
	}
	val, err := conGet(&con, key)
	if err != nil {
		return fmt.Errorf("error in move for path: '%s': %w", key, err)
	}
	if err := a.conRemove(&con, key); err != nil {
		return fmt.Errorf("error in move for path: '%s': %w", key, err)
	}
	path, err := op.path()
	if err != nil {
		return fmt.Errorf("move operation failed to decode path: %w", err)
	}
	con, key, ok = a.find(path, true)
	if !ok {
		return fmt.Errorf("move operation does not apply: doc is missing destination path: %s: %w", path, ErrMissing)
	}
	if err := a.conAdd(&con, key, val); err != nil {
		return fmt.Errorf("error in move for path: '%s': %w", path, err)
	}
	return nil
}

func (a *applier) test(op *Operation) error {
	path, err := op.path()
	if err != nil {
		return fmt.Errorf("test operation failed to decode path: %w", err)
	}
	if path == "" {
		val, verr := a.value(op)
		if verr != nil {
			return verr
		}
		if val == nil {
			panicLikeUpstream("test of the root without a value: invalid memory address or nil pointer dereference")
		}
		self := a.root
		if equalNodes(self, val) {
			return nil
		}
		return fmt.Errorf("testing value %s failed: %w", path, ErrTestFailed)
	}
	con, key, ok := a.find(path, false)
	if !ok {
		return fmt.Errorf("test operation does not apply: is missing path: %s: %w", path, ErrMissing)
	}
	cur, err := conGet(&con, key)
	if err != nil {
		return fmt.Errorf("error in test for path: '%s': %w", path, err)
	}
	val, err := a.value(op)
	if err != nil {
		return err
	}
	if cur == nil {
		if val == nil {
			return nil
		}
		return fmt.Errorf("testing value %s failed: %w", path, ErrTestFailed)
	} else if val == nil {
		return fmt.Errorf("testing value %s failed: %w", path, ErrTestFailed)
	}
	if equalNodes(cur, val) {
		return nil
	}
	return fmt.Errorf("testing value %s failed: %w", path, ErrTestFailed)
}

func (a *applier) copyOp(op *Operation) error {
	from, err := op.from()
	if err != nil {
		return fmt.Errorf("copy operation failed to decode from: %w", err)
	}
	con, key, ok := a.find(from, false)
	if !ok {
		return fmt.Errorf("copy operation does not apply: doc is missing from path: %s: %w", from, ErrMissing)
	}
	val, err := conGet(&con, key)
	if err != nil {
		return fmt.Errorf("error in copy for from: '%s': %w", from, err)
	}
	path, err := op.path()
	if err != nil {
		return fmt.Errorf("copy operation failed to decode path: %w", ErrMissing)
	}
	con, key, ok = a.find(path, true)
	if !ok {
		return fmt.Errorf("copy operation does not apply: doc is missing destination path: %s: %w", path, ErrMissing)
	}
	var valCopy any
	if val != nil {
		b, err := json.Marshal(val)
		if err != nil {
			return fmt.Errorf("error while performing deep copy: %w", err)
		}
		a.copySize += int64(len(b))
		valCopy = deepCopy(val, true)
	}
	if a.copyLimit > 0 && a.copySize > a.copyLimit {
		return evanphx.NewAccumulatedCopySizeError(a.copyLimit, a.copySize)
	}
	if err := a.conAdd(&con, key, valCopy); err != nil {
		return fmt.Errorf("error while adding value during copy: %w", err)
	}
	return nil
}

// deepCopy copies v as evanphx does through a marshal and a lazy re-parse:
// a top-level nullNode stays one, nested ones become document nulls.
func deepCopy(v any, top bool) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e, false)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e, false)
		}
		return out
	case nullNode:
		if top {
			return t
		}
		return nil
	default:
		return v
	}
}

// find is evanphx's findObject. With write set, every container on the way,
// the last one included, is made private to this Apply call first.
//
// The path's segments are those of strings.Split(path, "/"): the first one
// is ignored, the last one is the key, the others are walked.
func (a *applier) find(path string, write bool) (container, string, bool) {
	slash := strings.IndexByte(path, '/')
	if slash < 0 {
		return container{}, "", false
	}
	rest := path[slash+1:]
	slash = strings.IndexByte(rest, '/') // the end of the next segment to walk

	var con container
	switch r := a.root.(type) {
	case map[string]any:
		if r == nil && a.unnormalized {
			return container{}, "", false
		}
		if write {
			r = a.ownMap(r, slash < 0)
			a.root = r
		}
		con.kind, con.m = cMap, r
	case []any:
		if r == nil && a.unnormalized {
			return container{}, "", false
		}
		if write {
			r = a.ownSlice(r)
			a.root = r
		}
		con.kind, con.s = cArray, r
	case nullNode:
		con.kind = cNullDoc
	default:
		return container{}, "", false
	}
	for slash >= 0 {
		k := decodePatchKey(rest[:slash])
		rest = rest[slash+1:]
		slash = strings.IndexByte(rest, '/')
		var next any
		idx := -1
		switch con.kind {
		case cMap:
			next = con.m[k]
		case cNullDoc:
			next = nil
		case cArray:
			i, err := arrayIndex(con.s, k)
			if err != nil {
				return container{}, "", false
			}
			idx = i
			next = con.s[i]
		}
		var nc container
		switch n := next.(type) {
		case nil:
			return container{}, "", false
		case nullNode:
			nc.kind = cNullDoc
		case map[string]any:
			if n == nil && a.unnormalized {
				// Normalizing would have made it a null.
				return container{}, "", false
			}
			if write {
				// A map this call owns is where it was stored (as for
				// slices below): storing it again would only look its
				// key up again.
				if owned := a.ownMap(n, slash < 0); mapID(owned) != mapID(n) {
					n = owned
					con.store(k, idx, n)
				}
			}
			nc.kind, nc.m = cMap, n
		case []any:
			if n == nil && a.unnormalized {
				return container{}, "", false
			}
			if write {
				// A slice this call owns is where it was stored: storing
				// it again would only box it again.
				if owned := a.ownSlice(n); sliceID(n) == 0 || sliceID(owned) != sliceID(n) {
					n = owned
					con.store(k, idx, n)
				}
			}
			nc.kind, nc.s = cArray, n
			if con.kind == cMap {
				nc.parentMap, nc.parentKey = con.m, k
			} else {
				nc.parentSlice, nc.parentIdx = con.s, idx
			}
		default:
			return container{}, "", false
		}
		con = nc
	}
	return con, decodePatchKey(rest), true
}

// store puts a container into con at the key (maps) or resolved index (arrays).
func (c *container) store(key string, idx int, v any) {
	if c.kind == cMap {
		c.m[key] = v
	} else {
		c.s[idx] = v
	}
}

func (a *applier) setArray(c *container, s []any) {
	c.s = s
	switch {
	case c.parentMap != nil:
		c.parentMap[c.parentKey] = s
	case c.parentSlice != nil:
		c.parentSlice[c.parentIdx] = s
	default:
		a.root = s
	}
	a.own(s)
}

func mapID(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// sliceID is the identity of s's array (reflect.Value.Pointer's, without
// boxing the slice: no allocation).
func sliceID(s []any) uintptr {
	if cap(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
}

func (a *applier) own(v any) {
	var id uintptr
	switch t := v.(type) {
	case map[string]any:
		id = mapID(t)
	case []any:
		id = sliceID(t)
	}
	if id == 0 {
		return
	}
	if a.nOwnedFew < len(a.ownedFew) {
		// Most patches write to a few containers: no map to allocate.
		a.ownedFew[a.nOwnedFew] = id
		a.nOwnedFew++
		return
	}
	if a.owned == nil {
		a.owned = map[uintptr]struct{}{}
	}
	a.owned[id] = struct{}{}
}

// isOwned reports whether the map or slice of identity id (not 0) was made
// by this Apply call, so that it can be written in place.
func (a *applier) isOwned(id uintptr) bool {
	for _, o := range a.ownedFew[:a.nOwnedFew] {
		if o == id {
			return true
		}
	}
	_, ok := a.owned[id]
	return ok
}

// ownMap returns m, or a copy of m owned by this Apply call when m is not
// one. The copy is sized for m's entries, and one more when m is the
// container the operation writes to (last). A map held in one group of
// eight places (oneGroup) is copied by maps.Clone, which copies the group
// as it is, without hashing and inserting each entry again (when last, only
// when the group has a free place for the entry written). Other maps are
// copied entry by entry: maps.Clone copies their tables whole, and the
// objects Apply mostly sees have the room of the size hints
// runtime.DefaultUnstructuredConverter gives, a table for every field of
// the type — more work and garbage than the entries.
func (a *applier) ownMap(m map[string]any, last bool) map[string]any {
	if m != nil && a.isOwned(mapID(m)) {
		return m
	}
	if n := len(m); n > 0 && (n < groupPlaces || !last) && oneGroup(m) {
		c := maps.Clone(m)
		a.own(c)
		return c
	}
	room := len(m)
	if last {
		room++
	}
	c := make(map[string]any, room)
	for k, v := range m {
		c[k] = v
	}
	a.own(c)
	return c
}

// groupPlaces is the number of entries a map held in one group has room
// for (internal/runtime/maps: abi.MapGroupSlots).
const groupPlaces = 8

// runtimeMap is the start of the runtime's header of a map
// (internal/runtime/maps.Map since Go 1.24): how many entries it holds,
// its hash seed, and its directory of tables, or its one group when
// dirLen is 0.
type runtimeMap struct {
	used   uint64
	seed   uintptr
	dirPtr unsafe.Pointer
	dirLen int
}

// oneGroup reports whether m, not empty, is held in one group of
// groupPlaces places rather than in tables, as the runtime's header of m
// tells (runtimeMap), which ownMap reads to choose how to copy m. The
// header is trusted only when its count of entries is len(m); a wrong
// answer (a runtime that lays its maps out otherwise) only makes the copy
// slower, never different: either way it holds m's entries.
// TestOneGroupReadsTheRuntime holds it to the runtime of the build.
func oneGroup(m map[string]any) bool {
	h := *(**runtimeMap)(unsafe.Pointer(&m))
	return len(m) > 0 && h != nil && h.used == uint64(len(m)) && h.dirLen == 0 && h.dirPtr != nil
}

func (a *applier) ownSlice(s []any) []any {
	if id := sliceID(s); id != 0 && a.isOwned(id) {
		return s
	}
	c := slices.Clone(s)
	if c == nil {
		c = []any{}
	}
	a.own(c)
	return c
}

// arrayIndex is evanphx's partialArray.get index handling.
func arrayIndex(s []any, key string) (int, error) {
	idx, err := strconv.Atoi(key)
	if err != nil {
		return 0, err
	}
	if idx < 0 {
		if idx < -len(s) {
			return 0, fmt.Errorf("Unable to access invalid index: %d: %w", idx, ErrInvalidIndex)
		}
		idx += len(s)
	}
	if idx >= len(s) {
		return 0, fmt.Errorf("Unable to access invalid index: %d: %w", idx, ErrInvalidIndex)
	}
	return idx, nil
}

func conGet(c *container, key string) (any, error) {
	switch c.kind {
	case cMap:
		return c.m[key], nil
	case cArray:
		idx, err := arrayIndex(c.s, key)
		if err != nil {
			return nil, err
		}
		return c.s[idx], nil
	default:
		return nil, nil
	}
}

func (a *applier) conAdd(c *container, key string, val any) error {
	switch c.kind {
	case cNullDoc:
		panicLikeUpstream("assignment to entry in nil map")
	case cMap:
		if a.unnormalized {
			if old, ok := c.m[key]; ok {
				if err := a.discard(old); err != nil {
					return err
				}
			}
		}
		c.m[key] = val
		return nil
	}
	if key == "-" {
		s := make([]any, len(c.s), len(c.s)+1)
		copy(s, c.s)
		a.setArray(c, append(s, val))
		return nil
	}
	idx, err := strconv.Atoi(key)
	if err != nil {
		return fmt.Errorf("value was not a proper array index: '%s': %w", key, err)
	}
	sz := len(c.s) + 1
	if idx >= sz {
		return fmt.Errorf("Unable to access invalid index: %d: %w", idx, ErrInvalidIndex)
	}
	if idx < 0 {
		if idx < -sz {
			return fmt.Errorf("Unable to access invalid index: %d: %w", idx, ErrInvalidIndex)
		}
		idx += sz
	}
	s := make([]any, sz)
	copy(s[:idx], c.s[:idx])
	s[idx] = val
	copy(s[idx+1:], c.s[idx:])
	a.setArray(c, s)
	return nil
}

func (a *applier) conRemove(c *container, key string) error {
	switch c.kind {
	case cNullDoc:
		return fmt.Errorf("Unable to remove nonexistent key: %s: %w", key, ErrMissing)
	case cMap:
		old, ok := c.m[key]
		if !ok {
			return fmt.Errorf("Unable to remove nonexistent key: %s: %w", key, ErrMissing)
		}
		if err := a.discard(old); err != nil {
			return err
		}
		delete(c.m, key)
		return nil
	}
	idx, err := strconv.Atoi(key)
	if err != nil {
		return err
	}
	if idx >= len(c.s) {
		return fmt.Errorf("Unable to access invalid index: %d: %w", idx, ErrInvalidIndex)
	}
	if idx < 0 {
		if idx < -len(c.s) {
			return fmt.Errorf("Unable to access invalid index: %d: %w", idx, ErrInvalidIndex)
		}
		idx += len(c.s)
	}
	if err := a.discard(c.s[idx]); err != nil {
		return err
	}
	s := make([]any, len(c.s)-1)
	copy(s[:idx], c.s[:idx])
	copy(s[idx:], c.s[idx+1:])
	a.setArray(c, s)
	return nil
}

var rfc6901Decoder = strings.NewReplacer("~1", "/", "~0", "~")

// decodePatchKey is rfc6901Decoder.Replace(k) (decodePatchKeyReference)
// in one allocation: "~1" is "/", "~0" is "~", any other '~' stays.
func decodePatchKey(k string) string {
	i := strings.IndexByte(k, '~')
	if i < 0 {
		return k
	}
	var b strings.Builder
	b.Grow(len(k))
	b.WriteString(k[:i])
	for ; i < len(k); i++ {
		c := k[i]
		if c == '~' && i+1 < len(k) && (k[i+1] == '1' || k[i+1] == '0') {
			if k[i+1] == '1' {
				c = '/'
			}
			i++
		}
		b.WriteByte(c)
	}
	return b.String()
}

// decodePatchKeyReference is evanphx's decodePatchKey.
func decodePatchKeyReference(k string) string { return rfc6901Decoder.Replace(k) }

// equalNodes is evanphx's lazyNode.equal with n from the document and o from
// the operation, both non-nil.
func equalNodes(n, o any) bool {
	switch nv := n.(type) {
	case map[string]any, nullNode:
		nm, _ := nv.(map[string]any)
		var om map[string]any
		switch ov := o.(type) {
		case map[string]any:
			om = ov
		case nullNode:
		default:
			return false
		}
		if len(nm) != len(om) {
			return false
		}
		keys := make([]string, 0, len(nm))
		for k := range nm {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ov, ok := om[k]
			if !ok {
				return false
			}
			v := nm[k]
			if (v == nil) != (ov == nil) {
				return false
			}
			if v == nil {
				continue
			}
			if !equalNodes(v, ov) {
				return false
			}
		}
		return true
	case []any:
		var oa []any
		switch ov := o.(type) {
		case []any:
			oa = ov
		case nullNode:
		default:
			return false
		}
		if len(nv) != len(oa) {
			return false
		}
		for i, v := range nv {
			if v == nil || oa[i] == nil {
				panicLikeUpstream("test compares arrays holding null: invalid memory address or nil pointer dereference")
			}
			if !equalNodes(v, oa[i]) {
				return false
			}
		}
		return true
	case string:
		ov, ok := o.(string)
		return ok && nv == ov
	case bool:
		ov, ok := o.(bool)
		return ok && nv == ov
	case int64:
		ov, ok := o.(int64)
		return ok && nv == ov
	case float64:
		ov, ok := o.(float64)
		return ok && math.Float64bits(nv) == math.Float64bits(ov)
	}
	return false
}

// normalize returns v as the JSON round trip of evanphx would present it:
// numbers whose JSON text is an int64 become int64, others float64 (-0 is
// kept as float64 until the end since its text "-0" differs from "0"),
// invalid UTF-8 is replaced per byte as encoding/json does, and values of
// other Go types go through encoding/json. Containers are copied only when
// something in them changes.
func (a *applier) normalize(v any) (any, bool, error) {
	switch t := v.(type) {
	case nil, bool, int64:
		return v, false, nil
	case string:
		if utf8.ValidString(t) {
			return v, false, nil
		}
		return fixUTF8(t), true, nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			_, err := json.Marshal(t)
			return nil, false, err
		}
		if i, ok := floatAsInt(t); ok {
			return i, true, nil
		}
		if t == 0 {
			a.fixup = true
		}
		return v, false, nil
	case map[string]any:
		if t == nil {
			// encoding/json writes a nil map as null.
			return nil, true, nil
		}
		var out map[string]any
		badKeys := false
		for k, e := range t {
			if !utf8.ValidString(k) {
				badKeys = true
			}
			ne, changed, err := a.normalize(e)
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = make(map[string]any, len(t))
				for k2, e2 := range t {
					out[k2] = e2
				}
			}
			if changed {
				out[k] = ne
			}
		}
		if badKeys {
			src := t
			if out != nil {
				src = out
			}
			keys := make([]string, 0, len(src))
			for k := range src {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			fixed := make(map[string]any, len(src))
			for _, k := range keys {
				fixed[fixUTF8(k)] = src[k]
			}
			return fixed, true, nil
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	case []any:
		if t == nil {
			return nil, true, nil
		}
		var out []any
		for i, e := range t {
			ne, changed, err := a.normalize(e)
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = slices.Clone(t)
			}
			if changed {
				out[i] = ne
			}
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	case nullNode:
		return v, false, nil
	}
	// Anything else goes through JSON as upstream's encoder would see it.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false, err
	}
	var out any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, false, err
	}
	n, _, err := a.normalize(out)
	return n, true, err
}

// floatAsInt reports the int64 that k8s JSON decoding yields for the
// encoding/json text of f, if any.
func floatAsInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f == 0 && math.Signbit(f) {
		return 0, false
	}
	if f < -9223372036854775808.0 || f >= 9223372036854775808.0 {
		return 0, false
	}
	return int64(f), true
}

func fixUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// finalize turns nullNode into nil and float -0 into int64 0, as the final
// decode of the patched JSON does.
func (a *applier) finalize(v any, top bool) (any, bool) {
	if !a.fixup {
		if _, ok := v.(nullNode); ok && top {
			return nil, true
		}
		return v, false
	}
	switch t := v.(type) {
	case nullNode:
		return nil, true
	case float64:
		if t == 0 {
			return int64(0), true
		}
	case map[string]any:
		var out map[string]any
		for k, e := range t {
			ne, changed := a.finalize(e, false)
			if changed {
				if out == nil {
					out = make(map[string]any, len(t))
					for k2, e2 := range t {
						out[k2] = e2
					}
				}
				out[k] = ne
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range t {
			ne, changed := a.finalize(e, false)
			if changed {
				if out == nil {
					out = slices.Clone(t)
				}
				out[i] = ne
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}
