package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"
)

// A list's answer is read as it arrives (issue 31): the body is decoded
// item by item and the items are handed on in chunks of streamChunk, so
// that the audit holds one item's bytes and a chunk of objects, not a
// page's body and the page decoded from it (a 200 MB page held 610 MB).

// streamChunk is how many items of a page the Lister hands on at a time
// when it streams.
const streamChunk = 64

// streamingClient is NewClient's client: client-go's dynamic client, and
// the REST client under it, through which the Lister reads each list's
// body as it arrives.
type streamingClient struct {
	dynamic.Interface
	rest rest.Interface
}

// listParameters encode ListOptions as the dynamic client does.
var listParameters = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return runtime.NewParameterCodec(s)
}()

// open sends the list request the dynamic client would send and returns
// its body; an answer that is not a 2xx is the API server's error
// (apierrors.APIStatus), as the dynamic client returns it.
func (c streamingClient) open(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (io.ReadCloser, error) {
	path := []string{"api"}
	if gvr.Group != "" {
		path = []string{"apis", gvr.Group}
	}
	path = append(path, gvr.Version)
	if namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	path = append(path, gvr.Resource)
	return c.rest.Get().AbsPath(path...).SpecificallyVersionedParams(&opts, listParameters, schema.GroupVersion{Version: "v1"}).Stream(ctx)
}

// ErrNotAList is wrapped by the error of an answer that is not a
// well-formed list.
var ErrNotAList = errors.New("the answer is not a list")

// listMeta is what the Lister needs of a list besides its items.
type listMeta struct {
	Continue  string
	Remaining int64 // -1: not given
}

// decodeListStream reads a list's JSON from r, calling item with each of
// its items in order as soon as it is decoded (and the list's apiVersion
// and kind are known: the items of a typed list get them, as
// UnstructuredList decodes), and sets *meta from the list's metadata as soon as it is read. Each item is
// decoded as the dynamic client decodes it (sigs.k8s.io/json, case
// sensitive, integers kept as int64); an answer that is not a well-formed
// list (not an object; apiVersion or kind missing, not strings or spelled
// in another case; items not a list of objects; a key twice) fails with
// ErrNotAList. At most one item's bytes are held at a time, besides items
// that come before the list's apiVersion and kind (kube-apiserver writes
// those first).
func decodeListStream(r io.Reader, meta *listMeta, item func(unstructured.Unstructured) error) error {
	*meta = listMeta{Remaining: -1}
	dec := json.NewDecoder(r)
	notAList := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrNotAList, fmt.Sprintf(format, args...))
	}
	if tok, err := dec.Token(); err != nil {
		return decodeError(err)
	} else if tok != json.Delim('{') {
		return notAList("not a JSON object")
	}
	var apiVersion, kind string
	var pending []map[string]any // items before apiVersion and kind
	seen := map[string]bool{}
	ready := func() bool { return seen["apiVersion"] && kind != "" }
	hand := func(obj map[string]any) error {
		u := unstructured.Unstructured{Object: obj}
		if len(u.GetKind()) == 0 && len(u.GetAPIVersion()) == 0 {
			u.SetKind(trimList(kind))
			u.SetAPIVersion(apiVersion)
		}
		return item(u)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return decodeError(err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return notAList("%q twice", key)
		}
		seen[key] = true
		switch {
		case key == "apiVersion" || key == "kind":
			var s string
			if err := decodeValue(dec, &s); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			if key == "kind" {
				kind = s
			} else {
				if _, err := schema.ParseGroupVersion(s); err != nil {
					return notAList("apiVersion: %v", err)
				}
				apiVersion = s
			}
			if ready() {
				for _, obj := range pending {
					if err := hand(obj); err != nil {
						return err
					}
				}
				pending = nil
			}
		case strings.EqualFold(key, "apiVersion") || strings.EqualFold(key, "kind"):
			// The serializer reads apiVersion and kind in any case: a
			// list spelled so is not one the audit takes.
			return notAList("%q", key)
		case key == "metadata":
			// Read as UnstructuredList reads it: a field of another
			// type is left out.
			var m any
			if err := decodeValue(dec, &m); err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
			l := unstructured.UnstructuredList{Object: map[string]any{"metadata": m}}
			meta.Continue = l.GetContinue()
			if r := l.GetRemainingItemCount(); r != nil {
				meta.Remaining = *r
			}
		case key == "items":
			if tok, err := dec.Token(); err != nil {
				return decodeError(err)
			} else if tok != json.Delim('[') {
				return notAList("items is not a list")
			}
			for i := 0; dec.More(); i++ {
				var obj map[string]any
				if err := decodeValue(dec, &obj); err != nil {
					return fmt.Errorf("items[%d]: %w", i, err)
				}
				if obj == nil {
					return notAList("items[%d] is not an object", i)
				}
				if !ready() {
					pending = append(pending, obj)
					continue
				}
				if err := hand(obj); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ']'
				return decodeError(err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return decodeError(err)
			}
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return decodeError(err)
	}
	if !ready() {
		return notAList("apiVersion or kind missing")
	}
	if _, err := dec.Token(); err != io.EOF {
		return notAList("more after the list")
	}
	if !seen["items"] {
		return notAList("no items")
	}
	return nil
}

// decodeValue decodes the decoder's next value into v as the dynamic
// client decodes (case sensitive, integers kept).
func decodeValue(dec *json.Decoder, v any) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return decodeError(err)
	}
	if bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, v); err != nil {
		return fmt.Errorf("%w: %v", ErrNotAList, err)
	}
	return nil
}

// decodeError keeps an error of the body's reading (a timeout, a page over
// its bound) and calls the rest a malformed answer.
func decodeError(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", ErrNotAList, err)
	}
	return err
}

func trimList(kind string) string {
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}

// streamPage reads one page from opts.Continue through c, handing its
// items after the first skip on in chunks (deliver: the items and the API
// server's estimate of the items after the page, -1 when it gave none),
// and returns the page's metadata and how many items it had and how many
// it delivered. An error after some were delivered leaves them delivered:
// the caller asks for the page again and skips them. An error of deliver
// is returned wrapped in consumerError.
func streamPage(ctx context.Context, c streamingClient, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions, skip int, deliver func(items []unstructured.Unstructured, remaining int64) error) (meta listMeta, read, delivered int, err error) {
	body, err := c.open(ctx, gvr, namespace, opts)
	if err != nil {
		return listMeta{Remaining: -1}, 0, 0, err
	}
	defer body.Close()
	var chunk []unstructured.Unstructured
	flush := func() error {
		// A new slice each time: the consumer may keep the items.
		items := chunk
		chunk = nil
		delivered += len(items)
		if err := deliver(items, meta.Remaining); err != nil {
			return consumerError{err}
		}
		return nil
	}
	err = decodeListStream(body, &meta, func(u unstructured.Unstructured) error {
		read++
		if read <= skip {
			return nil
		}
		chunk = append(chunk, u)
		if len(chunk) < streamChunk {
			return nil
		}
		return flush()
	})
	if err != nil {
		return meta, read, delivered, err
	}
	if len(chunk) > 0 || delivered == 0 {
		err = flush()
	}
	return meta, read, delivered, err
}

// consumerError is an error of the Lister's caller, returned as it is,
// never retried.
type consumerError struct{ err error }

func (e consumerError) Error() string { return e.err.Error() }
func (e consumerError) Unwrap() error { return e.err }
