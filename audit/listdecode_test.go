package audit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The items of the audit benchmark's cluster (test/e2e TestAuditScale) as
// kube-apiserver 1.37 lists them: defaulted, with managedFields and status.
const (
	pagePod        = `{"metadata":{"name":"web-%[2]d-5d4f8-%[1]d","namespace":"scale-%04[1]d","uid":"6b1f0c5e-2c1a-4c1e-9d0e-%012[1]d","resourceVersion":"%[1]d","creationTimestamp":"2026-11-26T20:01:02Z","labels":{"app":"web-%[2]d"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-%[2]d-5d4f8","uid":"00000000-0000-0000-0000-0000000000%02[2]d","controller":true}],"managedFields":[{"manager":"e2e.test","operation":"Update","apiVersion":"v1","time":"2026-11-26T20:01:02Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"00000000-0000-0000-0000-0000000000%02[2]d\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}]},"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Pending","qosClass":"Burstable"}}`
	pageDeployment = `{"metadata":{"name":"web-%[2]d","namespace":"scale-%04[1]d","uid":"7c2e1d6f-3d2b-4d2f-8e1f-%012[1]d","resourceVersion":"%[1]d","generation":1,"creationTimestamp":"2026-11-26T20:01:02Z","labels":{"app":"web-%[2]d"},"annotations":{"deployment.kubernetes.io/revision":"1"},"managedFields":[{"manager":"e2e.test","operation":"Update","apiVersion":"apps/v1","time":"2026-11-26T20:01:02Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}}]},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web-%[2]d"}},"template":{"metadata":{"labels":{"app":"web-%[2]d"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%%","maxSurge":"25%%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600},"status":{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"unavailableReplicas":2,"conditions":[{"type":"Available","status":"False","lastUpdateTime":"2026-11-26T20:01:02Z","lastTransitionTime":"2026-11-26T20:01:02Z","reason":"MinimumReplicasUnavailable","message":"Deployment does not have minimum availability."}]}}`
	pageConfigMap  = `{"metadata":{"name":"cm-%[2]d","namespace":"scale-%04[1]d","uid":"8d3f2e7a-4e3c-4e3a-9f2a-%012[1]d","resourceVersion":"%[1]d","creationTimestamp":"2026-11-26T20:01:02Z","labels":{"app":"cm","skip-%[2]d":"x"},"managedFields":[{"manager":"e2e.test","operation":"Update","apiVersion":"v1","time":"2026-11-26T20:01:02Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:index":{},"f:payload":{}},"f:metadata":{"f:labels":{".":{},"f:app":{},"f:skip-%[2]d":{}}}}}]},"data":{"index":"%[2]d","payload":"` + "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv" + `"}}`
)

// page is a list of n items of the template, as kube-apiserver answers a
// list with limit n: without the items' apiVersion and kind.
func page(kind, apiVersion, item string, n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"kind":"%sList","apiVersion":"%s","metadata":{"resourceVersion":"123456","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDU2LCJzdGFydCI6IngifQ","remainingItemCount":99500},"items":[`, kind, apiVersion)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, item, i, i%20)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

var benchmarkPages = []struct {
	name string
	data []byte
}{
	{"pods", page("Pod", "v1", pagePod, DefaultPageSize)},
	{"deployments", page("Deployment", "apps/v1", pageDeployment, DefaultPageSize)},
	{"configmaps", page("ConfigMap", "v1", pageConfigMap, DefaultPageSize)},
}

// clientGoDecoder is the decoder client-go's dynamic client decodes JSON
// answers with (dynamic.ConfigFor's serializer).
func clientGoDecoder(t testing.TB) runtime.Serializer {
	t.Helper()
	for _, info := range dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			return info.Serializer
		}
	}
	t.Fatal("the dynamic client has no JSON serializer")
	return nil
}

// decodeBoth decodes data into an UnstructuredList with client-go's
// decoder (the reference) and listDecoder; it reports any difference in
// the objects, kinds or errors, and whether the fast path took data.
func decodeBoth(t *testing.T, ref runtime.Serializer, data []byte) (fast bool) {
	t.Helper()
	want, wantGVK, wantErr := ref.Decode(data, nil, &unstructured.UnstructuredList{})
	got, gotGVK, gotErr := listDecoder{ref}.Decode(data, nil, &unstructured.UnstructuredList{})
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%.200s: error %v, want %v", data, gotErr, wantErr)
	}
	if !reflect.DeepEqual(gotGVK, wantGVK) {
		t.Fatalf("%.200s: kind %v, want %v", data, gotGVK, wantGVK)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%.200s: decoded\n%#v\nwant\n%#v", data, got, want)
	}
	return listDecodeFast(data, &unstructured.UnstructuredList{})
}

func TestListDecodeIsTheClientGoDecode(t *testing.T) {
	ref := clientGoDecoder(t)
	for _, p := range benchmarkPages {
		t.Run("a page of 500 "+p.name+" decodes to the same objects", func(t *testing.T) {
			if !decodeBoth(t, ref, p.data) {
				t.Error("the page was not decoded by the fast path")
			}
		})
	}
	cases := []struct {
		name, data string
		// fast: the one-pass decode takes it (else client-go's decoder).
		fast bool
	}{
		{"an empty list", `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`, true},
		{"items with their own apiVersion and kind keep them", `{"kind":"List","apiVersion":"v1","items":[{"kind":"Pod","apiVersion":"v1"},{"kind":"X"},{"apiVersion":"a/v1"},{}]}`, true},
		{"items with a kind of another type get the list's", `{"kind":"PodList","apiVersion":"v1","items":[{"kind":5},{"kind":null,"apiVersion":""}]}`, true},
		{"numbers: integers stay int64, others float64", `{"kind":"PodList","apiVersion":"v1","items":[{"a":1,"b":1.5,"c":1e3,"d":-0,"e":9223372036854775807,"f":9223372036854775808,"g":[1,2.5,{"h":3}]}]}`, true},
		{"keys are case-sensitive, the last duplicate wins", `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"a","Name":"b","name":"c"}}],"Items":[{"x":1}]}`, true},
		{"a duplicate items key: the last", `{"kind":"PodList","apiVersion":"v1","items":[{"a":1}],"items":[{"b":2}]}`, true},
		{"escapes and unicode", `{"kind":"PodList","apiVersion":"v1","items":[{"s":"\u00e9\ud83d\ude00\n\"\\/","t":"\ud800"}]}`, true},
		{"a core apiVersion with a group", `{"kind":"DeploymentList","apiVersion":"apps/v1","items":[{"spec":{}}]}`, true},
		{"kind spelled in another case", `{"Kind":"PodList","apiVersion":"v1","items":[]}`, false},
		{"apiVersion spelled in another case", `{"kind":"PodList","APIVERSION":"a/b/c","items":[]}`, false},
		{"both spellings", `{"kind":"PodList","apiVersion":"v1","ApiVersion":"v1","items":[]}`, false},
		{"an apiVersion that does not parse", `{"kind":"PodList","apiVersion":"a/b/c","items":[]}`, false},
		{"an apiVersion of another type", `{"kind":"PodList","apiVersion":1,"items":[]}`, false},
		{"a null apiVersion", `{"kind":"PodList","apiVersion":null,"items":[]}`, false},
		{"no apiVersion", `{"kind":"PodList","items":[]}`, false},
		{"no kind", `{"apiVersion":"v1","items":[]}`, false},
		{"an empty kind", `{"kind":"","apiVersion":"v1","items":[]}`, false},
		{"no items", `{"kind":"PodList","apiVersion":"v1","metadata":{}}`, false},
		{"null items", `{"kind":"PodList","apiVersion":"v1","items":null}`, false},
		{"items not a list", `{"kind":"PodList","apiVersion":"v1","items":{"a":{}}}`, false},
		{"a null item", `{"kind":"PodList","apiVersion":"v1","items":[{},null]}`, false},
		{"an item not an object", `{"kind":"PodList","apiVersion":"v1","items":[{},"x"]}`, false},
		{"not an object", `["kind"]`, false},
		{"null", `null`, false},
		{"not JSON", `{"kind":"PodList",`, false},
		{"trailing data", `{"kind":"PodList","apiVersion":"v1","items":[]} {}`, false},
		{"an integer out of range", `{"kind":"PodList","apiVersion":"v1","items":[{"a":1e400}]}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if fast := decodeBoth(t, ref, []byte(c.data)); fast != c.fast {
				t.Errorf("fast path %v, want %v", fast, c.fast)
			}
		})
	}
	t.Run("a list that is not empty goes to client-go's decoder", func(t *testing.T) {
		data := []byte(`{"kind":"PodList","apiVersion":"v1","items":[{"a":1}]}`)
		into := &unstructured.UnstructuredList{Object: map[string]any{"kept": true}}
		want := into.DeepCopy()
		if _, _, err := ref.Decode(data, nil, want); err != nil {
			t.Fatal(err)
		}
		if _, _, err := (listDecoder{ref}).Decode(data, nil, into); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(into, want) {
			t.Errorf("decoded %v, want %v", into, want)
		}
	})
}

func FuzzListDecode(f *testing.F) {
	f.Add(page("Pod", "v1", pagePod, 2))
	f.Add(page("Deployment", "apps/v1", pageDeployment, 2))
	f.Add([]byte(`{"kind":"PodList","apiVersion":"v1","items":[{"kind":5},{"a":[1,2.5,null]}]}`))
	f.Add([]byte(`{"Kind":"PodList","apiVersion":"v1","items":[]}`))
	ref := clientGoDecoder(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeBoth(t, ref, data)
	})
}

// TestClientDecodesAsClientGo lists through NewClient and through
// client-go's dynamic client from a server answering pages, errors and
// objects: the same requests, objects and errors.
func TestClientDecodesAsClientGo(t *testing.T) {
	var mu sync.Mutex
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.URL.String())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(r.URL.Path, "/forbidden/"):
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"x\" cannot list resource \"pods\"","reason":"Forbidden","details":{"kind":"pods"},"code":403}`)
		case strings.Contains(r.URL.Path, "/gone/"):
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{"continue":"next"},"status":"Failure","message":"The provided continue parameter is too old","reason":"Expired","code":410}`)
		case strings.HasSuffix(r.URL.Path, "/deployments"):
			w.Write(benchmarkPages[1].data)
		case strings.HasSuffix(r.URL.Path, "/pods"):
			w.Write(benchmarkPages[0].data)
		default:
			fmt.Fprint(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"one"},"data":{"a":"1"}}`)
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	fast, err := NewClient(cfg, ClientOptions{QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dynamic.NewForConfig(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := metav1.ListOptions{Limit: 500, Continue: "abc", LabelSelector: "app=web", FieldSelector: "metadata.name!=x", ResourceVersion: "0"}
	calls := map[string]func(dynamic.Interface) (any, error){
		"pods in a namespace": func(c dynamic.Interface) (any, error) {
			return c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("ns").List(ctx, opts)
		},
		"deployments everywhere": func(c dynamic.Interface) (any, error) {
			return c.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).List(ctx, opts)
		},
		"a 403": func(c dynamic.Interface) (any, error) {
			return c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("forbidden").List(ctx, opts)
		},
		"a 410 with its continue token": func(c dynamic.Interface) (any, error) {
			return c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("gone").List(ctx, opts)
		},
		"one object": func(c dynamic.Interface) (any, error) {
			return c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("ns").Get(ctx, "one", metav1.GetOptions{})
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			requests = nil
			mu.Unlock()
			want, wantErr := call(plain)
			got, gotErr := call(fast)
			if !reflect.DeepEqual(gotErr, wantErr) {
				t.Errorf("error %#v, want %#v", gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded %v, want %v", got, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(requests) != 2 || requests[0] != requests[1] {
				t.Errorf("requests %q", requests)
			}
		})
	}
}

// BenchmarkListDecode decodes a page of 500 objects of the audit
// benchmark's cluster as client-go's dynamic client does and in one pass.
func BenchmarkListDecode(b *testing.B) {
	ref := clientGoDecoder(b)
	for _, p := range benchmarkPages {
		for _, d := range []struct {
			name string
			dec  runtime.Decoder
		}{{"client-go", ref}, {"one-pass", listDecoder{ref}}} {
			b.Run("page="+p.name+"/impl="+d.name, func(b *testing.B) {
				b.SetBytes(int64(len(p.data)))
				for b.Loop() {
					if _, _, err := d.dec.Decode(p.data, nil, &unstructured.UnstructuredList{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
