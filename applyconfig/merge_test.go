package applyconfig

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

const liveDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web}
  finalizers: [example.com/a, example.com/b]
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: u1}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}
  template:
    metadata:
      labels: {app: web}
    spec:
      tolerations:
      - {key: a, operator: Exists}
      nodeSelector: {disk: ssd}
      imagePullSecrets:
      - name: pull
      volumes:
      - name: x
        emptyDir: {}
      containers:
      - name: app
        image: nginx:1
        command: [nginx]
        env:
        - {name: A, value: "1"}
        - {name: B, value: "2"}
        ports:
        - {containerPort: 80, protocol: TCP}
        resources:
          limits: {cpu: 100m}
      - name: sidecar
        image: envoy:1
`

const livePodDuplicates = `
apiVersion: v1
kind: Pod
metadata:
  name: dup
spec:
  containers:
  - name: app
    image: app:1
    env:
    - {name: A, value: "1"}
    - {name: A, value: "2"}
  - name: app
    image: app:2
`

const livePod = `
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {a: "1"}
spec:
  containers:
  - name: app
    image: app:1
`

const liveConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
data: {a: "1", b: "2"}
`

const liveWidget = `
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  namespace: default
  labels: {app: w}
spec:
  replicas: 1
  name: first
  port: 80
  ports:
  - {name: http, protocol: TCP, port: 80}
  - {name: http, protocol: UDP, port: 81}
  items:
  - name: a
    value: "1"
    tags: [x, w]
    atomicTags: [p]
  - name: b
    value: "2"
  tags: [one, two]
  args: [--a]
  plainList: [p1]
  selector: {app: w}
  atomicMap: {k: v}
  settings: {s1: v1}
  nested:
    level:
      value: v
      deep:
        k1: {enabled: true, list: [a]}
  config:
    known: k
    extra: {deep: 1}
  anything: {free: form}
  template:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: inner}
    data: {x: y}
  ratio: 0.5
  enabled: false
status:
  phase: Pending
`

const liveWidgetDuplicates = `
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
spec:
  items:
  - {name: a, value: "1"}
  - {name: a, value: "2"}
  tags: [t, t]
`

type mergeCase struct {
	name    string
	live    string
	patch   string
	want    string // expected result (YAML); empty: only compare with upstream
	wantErr string // expected error substring
	// check, if set, inspects Merge's result further.
	check func(t *testing.T, got *unstructured.Unstructured)
}

func mergeCases() []mergeCase {
	return []mergeCase{
		// Built-in kinds: metadata.
		{name: "adds a label", live: livePod, patch: `metadata: {labels: {b: "2"}}`,
			check: wantField("metadata.labels", map[string]any{"a": "1", "b": "2"})},
		{name: "overwrites a label", live: livePod, patch: `metadata: {labels: {a: "9"}}`,
			check: wantField("metadata.labels", map[string]any{"a": "9"})},
		{name: "adds annotations to an object without any", live: livePod, patch: `metadata: {annotations: {note: hi}}`,
			check: wantField("metadata.annotations", map[string]any{"note": "hi"})},
		{name: "unites finalizers (set), keeping both orders", live: liveDeployment, patch: `metadata: {finalizers: [example.com/c, example.com/b]}`,
			check: wantField("metadata.finalizers", []any{"example.com/a", "example.com/c", "example.com/b"})},
		{name: "appends a new finalizer (set)", live: liveDeployment, patch: `metadata: {finalizers: [example.com/c]}`,
			check: wantField("metadata.finalizers", []any{"example.com/a", "example.com/b", "example.com/c"})},
		{name: "applies finalizers to an object without any", live: livePod, patch: `metadata: {finalizers: [f2, f1]}`,
			check: wantField("metadata.finalizers", []any{"f2", "f1"})},
		{name: "refuses ownerReferences (atomic struct items)", live: liveDeployment,
			patch:   `metadata: {ownerReferences: [{apiVersion: v1, kind: Secret, name: other, uid: u2}]}`,
			wantErr: atomicPrefix + ".metadata.ownerReferences[0]"},
		{name: "an empty patch changes nothing", live: liveDeployment, patch: `{}`, want: liveDeployment},
		{name: "patch apiVersion and kind are overwritten with the live ones", live: livePod,
			patch: `{apiVersion: apps/v1, kind: Deployment, metadata: {labels: {b: "2"}}}`,
			check: wantField("kind", "Pod")},

		// Built-in kinds: spec.
		{name: "sets replicas", live: liveDeployment, patch: `spec: {replicas: 3}`,
			check: wantField("spec.replicas", int64(3))},
		{name: "updates a container by name", live: liveDeployment,
			patch: `spec: {template: {spec: {containers: [{name: sidecar, image: envoy:2}]}}}`},
		{name: "appends a new container", live: liveDeployment,
			patch: `spec: {template: {spec: {containers: [{name: new, image: busybox}]}}}`},
		{name: "merges env by name inside a container", live: liveDeployment,
			patch: `spec: {template: {spec: {containers: [{name: app, env: [{name: B, value: "20"}, {name: C, value: "3"}]}]}}}`},
		{name: "adds a container port (map list with two keys)", live: liveDeployment,
			patch: `spec: {template: {spec: {containers: [{name: app, ports: [{containerPort: 443, protocol: TCP}]}]}}}`},
		{name: "adds a volume", live: liveDeployment,
			patch: `spec: {template: {spec: {volumes: [{name: vol2, emptyDir: {}}]}}}`},
		{name: "merges a volume with the same name", live: liveDeployment,
			patch: `spec: {template: {spec: {volumes: [{name: x, emptyDir: {medium: Memory}}]}}}`},
		{name: "refuses imagePullSecrets (atomic struct items)", live: liveDeployment,
			patch:   `spec: {template: {spec: {imagePullSecrets: [{name: other}]}}}`,
			wantErr: atomicPrefix + ".spec.template.spec.imagePullSecrets[0]"},
		{name: "sets a resource limit", live: liveDeployment,
			patch: `spec: {template: {spec: {containers: [{name: app, resources: {limits: {memory: 64Mi}}}]}}}`},
		{name: "sets int-or-string as an integer", live: liveDeployment,
			patch: `spec: {strategy: {rollingUpdate: {maxSurge: 2}}}`},
		{name: "sets int-or-string as a string", live: liveDeployment,
			patch: `spec: {strategy: {rollingUpdate: {maxUnavailable: 10%}}}`},
		{name: "sets status", live: liveDeployment, patch: `status: {replicas: 1}`},
		{name: "merges configmap data", live: liveConfigMap, patch: `data: {b: "20", c: "3"}`,
			check: wantField("data", map[string]any{"a": "1", "b": "20", "c": "3"})},
		{name: "refuses tolerations (atomic list)", live: liveDeployment,
			patch:   `spec: {template: {spec: {tolerations: [{key: b, operator: Exists}]}}}`,
			wantErr: atomicPrefix + ".spec.template.spec.tolerations"},
		{name: "refuses nodeSelector (atomic map)", live: liveDeployment,
			patch:   `spec: {template: {spec: {nodeSelector: {zone: a}}}}`,
			wantErr: atomicPrefix + ".spec.template.spec.nodeSelector"},
		{name: "refuses the label selector (atomic struct)", live: liveDeployment,
			patch:   `spec: {selector: {matchLabels: {app: x}}}`,
			wantErr: atomicPrefix + ".spec.selector"},
		{name: "refuses a container command (atomic list in a map list)", live: liveDeployment,
			patch:   `spec: {template: {spec: {containers: [{name: sidecar, command: [envoy]}]}}}`,
			wantErr: atomicPrefix + ".spec.template.spec.containers[0].command"},
		{name: "refuses several atomics at once", live: liveDeployment,
			patch:   `spec: {selector: {matchLabels: {app: x}}, template: {spec: {nodeSelector: {a: b}, tolerations: [], containers: [{name: a, command: [x]}, {name: b, args: [z]}]}}}`,
			wantErr: "may not mutate atomic arrays, maps or structs"},
		{name: "refuses an unknown field", live: liveDeployment, patch: `spec: {replicaz: 3}`,
			wantErr: "field not declared in schema"},
		{name: "refuses an unknown top-level field", live: livePod, patch: `bogus: 1`,
			wantErr: "field not declared in schema"},
		// A Go nil passes the merge (CEL never produces one: its null is refused, see FromCEL tests).
		{name: "keeps a Go nil label value as upstream does", live: livePod, patch: `metadata: {labels: {a: null}}`,
			check: wantField("metadata.labels", map[string]any{"a": nil})},
		{name: "ignores a Go nil struct as upstream does", live: liveDeployment, patch: `spec: null`},
		{name: "refuses a string where a map belongs", live: livePod, patch: `metadata: {labels: x}`,
			wantErr: ".metadata.labels: expected map, got &{x}"},
		{name: "refuses a string for replicas", live: liveDeployment, patch: `spec: {replicas: "3"}`,
			wantErr: "failed to convert patch object to typed object"},
		{name: "refuses a map where a list belongs", live: liveDeployment,
			patch:   `spec: {template: {spec: {containers: {name: x}}}}`,
			wantErr: "expected list"},
		{name: "appends a map-list item without its key as upstream does", live: liveDeployment,
			patch: `spec: {template: {spec: {containers: [{image: x}]}}}`},
		{name: "tolerates duplicate keys in live lists", live: livePodDuplicates,
			patch: `metadata: {labels: {a: b}}`},
		{name: "patching a list with duplicate live keys", live: livePodDuplicates,
			patch: `spec: {containers: [{name: app, image: app:3}]}`},
		{name: "patching a nested list with duplicate live keys", live: livePodDuplicates,
			patch: `spec: {containers: [{name: other, env: [{name: A, value: "3"}]}]}`},
		{name: "refuses duplicate keys in the patch", live: livePod,
			patch:   `spec: {containers: [{name: x, image: a}, {name: x, image: b}]}`,
			wantErr: "duplicate entries for key"},
		{name: "accepts a float for an integer (numeric) as upstream does", live: liveDeployment, patch: `spec: {replicas: 1.5}`,
			check: wantField("spec.replicas", 1.5)},

		// CRD kinds.
		{name: "sets a CR scalar", live: liveWidget, patch: `spec: {replicas: 5, name: second}`},
		{name: "adds a CR label (ObjectMeta from the built-in definitions)", live: liveWidget,
			patch: `metadata: {labels: {b: c}}`},
		{name: "adds to a listType=map with two keys", live: liveWidget,
			patch: `spec: {ports: [{name: https, protocol: TCP, port: 443}]}`},
		{name: "merges into a listType=map item by both keys", live: liveWidget,
			patch: `spec: {ports: [{name: http, protocol: UDP, port: 8081}]}`},
		{name: "merges a map-list item and unites its nested set", live: liveWidget,
			patch: `spec: {items: [{name: a, tags: [z, x]}, {name: c}]}`,
			check: func(t *testing.T, got *unstructured.Unstructured) {
				items, _, _ := unstructured.NestedSlice(got.Object, "spec", "items")
				want := []any{
					map[string]any{"name": "a", "value": "1", "tags": []any{"z", "x", "w"}, "atomicTags": []any{"p"}},
					map[string]any{"name": "b", "value": "2"},
					map[string]any{"name": "c"},
				}
				if !reflect.DeepEqual(items, want) {
					t.Errorf("items = %#v, want %#v", items, want)
				}
			}},
		{name: "unites a listType=set", live: liveWidget, patch: `spec: {tags: [three, one]}`,
			check: wantField("spec.tags", []any{"three", "one", "two"})},
		{name: "refuses a listType=atomic", live: liveWidget, patch: `spec: {args: [--b]}`,
			wantErr: atomicPrefix + ".spec.args"},
		{name: "refuses a list without listType (atomic)", live: liveWidget, patch: `spec: {plainList: [p2]}`,
			wantErr: atomicPrefix + ".spec.plainList"},
		{name: "refuses an atomic list inside a map-list item", live: liveWidget,
			patch:   `spec: {items: [{name: b}, {name: a, atomicTags: [q]}]}`,
			wantErr: atomicPrefix + ".spec.items[1].atomicTags"},
		{name: "refuses a map-type atomic struct", live: liveWidget, patch: `spec: {selector: {tier: x}}`,
			wantErr: atomicPrefix + ".spec.selector"},
		{name: "refuses a map-type atomic map", live: liveWidget, patch: `spec: {atomicMap: {k2: v2}}`,
			wantErr: atomicPrefix + ".spec.atomicMap"},
		{name: "merges a granular map", live: liveWidget, patch: `spec: {settings: {s2: v2}}`,
			check: wantField("spec.settings", map[string]any{"s1": "v1", "s2": "v2"})},
		{name: "merges nested structs", live: liveWidget, patch: `spec: {nested: {level: {value: w}}}`},
		{name: "does not guard atomics below granular map values (as upstream)", live: liveWidget,
			patch: `spec: {nested: {level: {deep: {k1: {list: [b]}, k2: {enabled: true}}}}}`,
			check: wantField("spec.nested.level.deep.k1.list", []any{"b"})},
		{name: "merges unknown fields under preserve-unknown-fields", live: liveWidget,
			patch: `spec: {config: {known: k2, extra: {more: 2}, new: [1, 2]}}`},
		{name: "sets a schemaless preserve-unknown-fields field to a map", live: liveWidget,
			patch: `spec: {anything: {more: true}}`},
		{name: "refuses a list in a schemaless preserve-unknown-fields field (deduced lists are atomic)", live: liveWidget,
			patch:   `spec: {anything: [1, 2]}`,
			wantErr: atomicPrefix + ".spec.anything"},
		{name: "sets int-or-string to a string", live: liveWidget, patch: `spec: {port: http}`,
			check: wantField("spec.port", "http")},
		{name: "accepts any scalar for int-or-string as upstream does", live: liveWidget, patch: `spec: {port: true}`,
			check: wantField("spec.port", true)},
		{name: "merges into an embedded resource", live: liveWidget,
			patch: `spec: {template: {metadata: {labels: {l: v}}, data: {z: w}}}`},
		{name: "refuses an unknown field in a CR", live: liveWidget, patch: `spec: {unknown: 1}`,
			wantErr: "field not declared in schema"},
		{name: "refuses a string where a CR list belongs", live: liveWidget, patch: `spec: {tags: x}`,
			wantErr: "failed to convert patch object to typed object"},
		{name: "keeps a Go nil CR scalar as upstream does", live: liveWidget, patch: `spec: {name: null}`},
		{name: "refuses a map for a CR string", live: liveWidget, patch: `spec: {name: {a: b}}`,
			wantErr: "failed to convert patch object to typed object"},
		{name: "sets CR status", live: liveWidget, patch: `status: {phase: Running}`},
		{name: "sets a number field to an integer", live: liveWidget, patch: `spec: {ratio: 2}`},
		{name: "sets a boolean", live: liveWidget, patch: `spec: {enabled: true}`},
		{name: "tolerates duplicate keys in live CR lists", live: liveWidgetDuplicates,
			patch: `spec: {replicas: 2}`},
		{name: "patches a CR map list with duplicate live keys", live: liveWidgetDuplicates,
			patch: `spec: {items: [{name: a, value: "3"}]}`},
		{name: "patches a CR set with duplicate live items", live: liveWidgetDuplicates,
			patch: `spec: {tags: [u]}`},
	}
}

// wantField returns a check that a dotted field path of the result holds want.
func wantField(path string, want any) func(t *testing.T, got *unstructured.Unstructured) {
	return func(t *testing.T, got *unstructured.Unstructured) {
		t.Helper()
		v, found, err := unstructured.NestedFieldNoCopy(got.Object, strings.Split(path, ".")...)
		if err != nil || !found {
			t.Fatalf("%s not found (err %v) in %#v", path, err, got.Object)
		}
		if !reflect.DeepEqual(v, want) {
			t.Errorf("%s = %#v, want %#v", path, v, want)
		}
	}
}

func TestMergeMatchesUpstream(t *testing.T) {
	s := sharedSchemas(t)
	for _, c := range mergeCases() {
		t.Run(c.name, func(t *testing.T) {
			live := fromYAML(t, c.live)
			tc, err := s.TypeConverter((&unstructured.Unstructured{Object: live}).GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			got, err := compareWithUpstream(t, tc, live, fromYAML(t, c.patch))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if c.want != "" && !reflect.DeepEqual(got.Object, fromYAML(t, c.want)) {
				t.Errorf("result = %#v\nwant %#v", got.Object, fromYAML(t, c.want))
			}
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
}

func TestMergeAtomicOrderIsDeterministic(t *testing.T) {
	s := sharedSchemas(t)
	tc, err := s.TypeConverter(widgetGVK)
	if err != nil {
		t.Fatal(err)
	}
	live := fromYAML(t, liveWidget)
	p := fromYAML(t, `spec: {selector: {app: x}, args: [b], atomicMap: {a: b}, plainList: [c], items: [{name: a, atomicTags: [x]}]}`)
	want := atomicPrefix + ".spec.args, .spec.atomicMap, .spec.items[0].atomicTags, .spec.plainList, .spec.selector"
	for range 20 {
		_, err := Merge(tc, &unstructured.Unstructured{Object: live}, p)
		if err == nil || err.Error() != want {
			t.Fatalf("error = %v\nwant %s", err, want)
		}
	}
}

func TestMergeErrors(t *testing.T) {
	s := sharedSchemas(t)
	tc, err := s.TypeConverter(podGVK)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a nil type converter is refused as upstream does", func(t *testing.T) {
		live := fromYAML(t, livePod)
		_, err := compareWithUpstream(t, nil, live, map[string]any{})
		if err == nil || err.Error() != "error applying patch: type converter must not be nil" {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("a live object of another kind than the converter knows fails", func(t *testing.T) {
		wtc, err := s.TypeConverter(widgetGVK)
		if err != nil {
			t.Fatal(err)
		}
		_, err = compareWithUpstream(t, wtc, fromYAML(t, livePod), map[string]any{})
		if err == nil || !strings.Contains(err.Error(), "failed to convert patch object to typed object") {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("a nil live object is an error, not a panic", func(t *testing.T) {
		if _, err := Merge(tc, nil, map[string]any{}); err == nil {
			t.Fatal("want error")
		}
	})
	t.Run("a live object that does not fit its schema fails", func(t *testing.T) {
		live := fromYAML(t, livePod)
		live["spec"] = "oops"
		_, err := compareWithUpstream(t, tc, live, map[string]any{})
		if err == nil || !strings.Contains(err.Error(), "failed to convert original object to typed object") {
			t.Fatalf("error = %v", err)
		}
	})
}

// TestMergeOwnedIsMerge holds MergeOwned, which may modify the patch it is
// handed, and MergeFresh, which may modify all of it, to Merge on every
// merge case: the same result (object, and what the next merge of a chain
// reuses) or the same error, alone and chained after the same case, with
// a patch of no entries or nil, and with a Merger of another kind.
func TestMergeOwnedIsMerge(t *testing.T) {
	s := sharedSchemas(t)
	cases := mergeCases()
	cases = append(cases,
		mergeCase{name: "an empty patch", live: livePod, patch: `{}`},
		mergeCase{name: "a patch with another apiVersion and kind", live: livePod, patch: `{apiVersion: apps/v1, kind: Deployment, metadata: {labels: {b: "2"}}}`},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			live := fromYAML(t, c.live)
			gvk := (&unstructured.Unstructured{Object: live}).GroupVersionKind()
			tc, err := s.TypeConverter(gvk)
			if err != nil {
				t.Fatal(err)
			}
			m := NewMerger(tc, gvk)
			patch := fromYAML(t, c.patch)
			want, wantErr := m.Merge(&unstructured.Unstructured{Object: runtime.DeepCopyJSON(live)}, patch, nil)
			if !reflect.DeepEqual(patch, fromYAML(t, c.patch)) {
				t.Fatal("Merge modified its patch")
			}
			got, err := m.MergeOwned(&unstructured.Unstructured{Object: runtime.DeepCopyJSON(live)}, fromYAML(t, c.patch), nil)
			sameAsMerge(t, got, err, want, wantErr)
			fresh, err := m.MergeFresh(&unstructured.Unstructured{Object: runtime.DeepCopyJSON(live)}, fromYAML(t, c.patch), nil)
			sameAsMerge(t, fresh, err, want, wantErr)
			if err != nil {
				return
			}
			// Chained, fresh: the same patch again, into its result.
			again, err := m.Merge(&unstructured.Unstructured{Object: want.Object.Object}, fromYAML(t, c.patch), want)
			freshAgain, freshErr := m.MergeFresh(&unstructured.Unstructured{Object: fresh.Object.Object}, fromYAML(t, c.patch), fresh)
			sameAsMerge(t, freshAgain, freshErr, again, err)
			// Chained: the same patch again, into each one's result.
			want, wantErr = m.Merge(&unstructured.Unstructured{Object: want.Object.Object}, fromYAML(t, c.patch), want)
			got, err = m.MergeOwned(&unstructured.Unstructured{Object: got.Object.Object}, fromYAML(t, c.patch), got)
			sameAsMerge(t, got, err, want, wantErr)
		})
	}
	t.Run("a nil patch", func(t *testing.T) {
		tc, err := s.TypeConverter(podGVK)
		if err != nil {
			t.Fatal(err)
		}
		m := NewMerger(tc, podGVK)
		want, wantErr := m.Merge(&unstructured.Unstructured{Object: fromYAML(t, livePod)}, nil, nil)
		got, err := m.MergeOwned(&unstructured.Unstructured{Object: fromYAML(t, livePod)}, nil, nil)
		sameAsMerge(t, got, err, want, wantErr)
	})
	t.Run("a Merger of another kind", func(t *testing.T) {
		tc, err := s.TypeConverter(podGVK)
		if err != nil {
			t.Fatal(err)
		}
		patch := `{metadata: {labels: {b: "2"}}, spec: {containers: [{name: side, image: busybox}]}}`
		want, wantErr := MergeTyped(tc, &unstructured.Unstructured{Object: fromYAML(t, livePod)}, fromYAML(t, patch), nil)
		m := NewMerger(tc, deploymentGVK)
		got, err := m.MergeFresh(&unstructured.Unstructured{Object: fromYAML(t, livePod)}, fromYAML(t, patch), nil)
		sameAsMerge(t, got, err, want, wantErr)
		if err != nil || got.Object.GetKind() != "Pod" {
			t.Fatalf("merged %v, %v", got, err)
		}
	})
}

// sameAsMerge fails unless got and err, MergeOwned's, are want and wantErr,
// Merge's.
func sameAsMerge(t *testing.T, got *Merged, err error, want *Merged, wantErr error) {
	t.Helper()
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("MergeOwned error %v, Merge's %v", err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Fatalf("MergeOwned error %q, Merge's %q", err, wantErr)
		}
	case !reflect.DeepEqual(got.Object.Object, want.Object.Object):
		t.Fatalf("MergeOwned result %#v\nMerge's %#v", got.Object.Object, want.Object.Object)
	case got.valid != want.valid || (got.typed == nil) != (want.typed == nil) || got.tc != want.tc:
		t.Fatalf("MergeOwned keeps valid=%v typed=%v, Merge valid=%v typed=%v", got.valid, got.typed != nil, want.valid, want.typed != nil)
	}
}
