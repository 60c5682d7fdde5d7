package params

import (
	"sync"
	"weak"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// memoLimit bounds how many values a Memo holds: past it, the Memo starts
// over (the values of objects still in use are derived again).
const memoLimit = 4096

// Memo remembers one value derived from a param object, by the object's
// identity: the *unstructured.Unstructured a Source returned. A Source
// never changes an object it has handed out — a changed param is a new
// object, as in an informer's store and in Memory — so a value derived
// from the object alone stays what deriving it again would give. The Memo
// holds its objects weakly (a collected object's value is dropped when the
// Memo starts over) and at most memoLimit values. Safe for concurrent use;
// the zero value is ready.
type Memo struct {
	mu     sync.RWMutex
	values map[weak.Pointer[unstructured.Unstructured]]any
}

// Get returns the value remembered for o, or derives it (an error is
// returned, not remembered).
func (m *Memo) Get(o *unstructured.Unstructured, derive func() (any, error)) (any, error) {
	key := weak.Make(o)
	m.mu.RLock()
	v, ok := m.values[key]
	m.mu.RUnlock()
	if ok {
		return v, nil
	}
	v, err := derive()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if kept, ok := m.values[key]; ok {
		return kept, nil
	}
	if m.values == nil || len(m.values) >= memoLimit {
		m.values = map[weak.Pointer[unstructured.Unstructured]]any{}
	}
	m.values[key] = v
	return v, nil
}
