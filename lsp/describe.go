package lsp

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The OpenAPI descriptions of the built-in kinds' fields. The definitions
// kube-apiserver's type checker resolves (costs/internal/kindschema) are
// reduced to what the checker reads, without descriptions; the OpenAPI
// document kube-apiserver serves takes each description from the Go
// type's doc comment, which k8s.io/api carries as the generated
// SwaggerDoc methods (types_swagger_doc_generated.go). Those are read
// here through the Go types client-go's scheme registers for each kind.

// swaggerDocer is a k8s.io/api type with its fields' descriptions, by
// JSON name ("" the type's own).
type swaggerDocer interface{ SwaggerDoc() map[string]string }

// builtinType is the Go type of a built-in kind; nil when client-go's
// scheme does not know it (a custom resource).
func builtinType(gvk schema.GroupVersionKind) reflect.Type {
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return nil
	}
	return reflect.TypeOf(obj)
}

// builtinDocs are the descriptions of the fields of the struct reached
// from kind gvk's Go type along segs (JSON names; "[]" or an index steps
// into a list's items or a map's values), by JSON name; nil when segs
// leave the Go types.
func builtinDocs(gvk schema.GroupVersionKind, segs []string) map[string]string {
	t := builtinType(gvk)
	if t == nil {
		return nil
	}
	for _, seg := range segs {
		t = elemType(t)
		if seg == "[]" || isAllDigits(seg) {
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Map {
				return nil
			}
			t = t.Elem()
			continue
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem() // a key of a map
		case reflect.Struct:
			if t = fieldType(t, seg); t == nil {
				return nil
			}
		default:
			return nil
		}
	}
	t = elemType(t)
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = elemType(t.Elem())
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return structDocs(t, 0)
}

// elemType is t through pointers.
func elemType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// structDocs are the SwaggerDoc descriptions of a struct's fields, those
// of inlined embedded structs included.
func structDocs(t reflect.Type, depth int) map[string]string {
	out := map[string]string{}
	if depth > 4 {
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if sf.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			if et := elemType(sf.Type); et.Kind() == reflect.Struct {
				for k, v := range structDocs(et, depth+1) {
					out[k] = v
				}
			}
		}
	}
	if d, ok := reflect.New(t).Elem().Interface().(swaggerDocer); ok {
		for k, v := range d.SwaggerDoc() {
			if k != "" {
				out[k] = v
			}
		}
	}
	return out
}
