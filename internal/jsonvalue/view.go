package jsonvalue

// View is a CEL value that presents a JSON-shaped Go value of an object as
// it is: a map[string]any or a []any, read in place (compiler's views of
// the object). Its conversions are those of cel-go's map or list over the
// same Go value (types.NewStringInterfaceMap, types.NewDynamicList), so a
// consumer that converts such cel-go views directly (jsonpatch's operation
// values) may convert a View the same way from ViewOf.
type View interface {
	// ViewOf is the Go map[string]any or []any presented, not a copy:
	// the caller must not change it.
	ViewOf() any
}
