package admissionplugins

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/scheme"
)

// pluginCase is one request through the admission plugins before MAP:
// the objects of the cluster, the request's object (a CREATE in
// namespace ns unless old is set) and what the plugins must make of it.
type pluginCase struct {
	name     string
	objects  []string
	flags    Flags
	resource string // plural, e.g. "pods"
	object   string
	// want maps field paths (dots, list indexes as numbers) to their
	// values in the result; nil values must be absent.
	want map[string]any
	// denied is the refusal's message, when the plugins refuse.
	denied string
	// steps are the plugins that changed the object, in order.
	changed []string
}

const (
	limitRange      = `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr","namespace":"limited"},"spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"256Mi"},"defaultRequest":{"cpu":"100m"}}]}}`
	defaultSC       = `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"example.com/fast"}`
	otherSC         = `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"slow"},"provisioner":"example.com/slow"}`
	defaultIC       = `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass","metadata":{"name":"nginx","annotations":{"ingressclass.kubernetes.io/is-default-class":"true"}},"spec":{"controller":"k8s.io/ingress-nginx"}}`
	kataRC          = `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"kata"},"handler":"kata","overhead":{"podFixed":{"cpu":"250m","memory":"120Mi"}},"scheduling":{"nodeSelector":{"runtime":"kata"},"tolerations":[{"key":"kata","operator":"Exists","effect":"NoSchedule"}]}}`
	builderSA       = `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"builder","namespace":"ns"},"automountServiceAccountToken":false,"imagePullSecrets":[{"name":"registry"}]}`
	terminating     = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"leaving"},"status":{"phase":"Terminating"}}`
	zonedNode       = `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"z1","topology.kubernetes.io/region":"r1","other":"x"}}}`
	podSpecOneInit  = `"initContainers":[{"name":"init","image":"busybox"}],"containers":[{"name":"c","image":"nginx"}]`
	tokenMountPath  = "/var/run/secrets/kubernetes.io/serviceaccount"
	tokenVolumeName = "kube-api-access-" + TokenVolumeSuffix
)

func pod(ns, spec string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"` + ns + `"},"spec":{` + spec + `}}`
}

func pluginCases() []pluginCase {
	defaults := []string{"NamespaceLifecycle", "ServiceAccount", "Priority", "DefaultTolerationSeconds"}
	return []pluginCase{{
		name: "a Pod without serviceAccountName gets the default one and its token volume", resource: "pods",
		object: pod("ns", podSpecOneInit),
		want: map[string]any{
			"spec.serviceAccountName": "default", "spec.serviceAccount": "default",
			"spec.volumes.0.name":                                                       tokenVolumeName,
			"spec.volumes.0.projected.defaultMode":                                      int64(420),
			"spec.volumes.0.projected.sources.0.serviceAccountToken.path":               "token",
			"spec.volumes.0.projected.sources.0.serviceAccountToken.expirationSeconds":  int64(3607),
			"spec.volumes.0.projected.sources.1.configMap.name":                         "kube-root-ca.crt",
			"spec.volumes.0.projected.sources.2.downwardAPI.items.0.fieldRef.fieldPath": "metadata.namespace",
			"spec.containers.0.volumeMounts.0.name":                                     tokenVolumeName,
			"spec.containers.0.volumeMounts.0.mountPath":                                tokenMountPath,
			"spec.containers.0.volumeMounts.0.readOnly":                                 true,
			"spec.initContainers.0.volumeMounts.0.name":                                 tokenVolumeName,
			"spec.priority":                        int64(0),
			"spec.tolerations.0.key":               "node.kubernetes.io/not-ready",
			"spec.tolerations.1.key":               "node.kubernetes.io/unreachable",
			"spec.tolerations.1.tolerationSeconds": int64(300),
		},
		changed: defaults[1:],
	}, {
		name: "a Pod of a ServiceAccount that opts out of the token gets its image pull secrets", resource: "pods",
		objects: []string{builderSA},
		object:  pod("ns", `"serviceAccountName":"builder","containers":[{"name":"c","image":"nginx"}]`),
		want: map[string]any{
			"spec.serviceAccountName": "builder", "spec.volumes": nil, "spec.containers.0.volumeMounts": nil,
			"spec.imagePullSecrets.0.name": "registry",
		},
		changed: defaults[1:],
	}, {
		name: "a Pod that mounts something at the token's path gets no token volume for that container", resource: "pods",
		object: pod("ns", `"volumes":[{"name":"own","emptyDir":{}}],"containers":[{"name":"c","image":"nginx","volumeMounts":[{"name":"own","mountPath":"`+tokenMountPath+`"}]}]`),
		want:   map[string]any{"spec.volumes.1": nil, "spec.containers.0.volumeMounts.1": nil},
	}, {
		name: "a Pod of a missing ServiceAccount is refused", resource: "pods",
		object: pod("ns", `"serviceAccountName":"ghost","containers":[{"name":"c","image":"nginx"}]`),
		denied: `pods "p" is forbidden: error looking up service account ns/ghost: serviceaccount "ghost" not found`,
	}, {
		name: "a mirror Pod may not name a ServiceAccount", resource: "pods",
		object: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","annotations":{"kubernetes.io/config.mirror":"x"}},"spec":{"serviceAccountName":"default","containers":[{"name":"c","image":"nginx"}]}}`,
		denied: `pods "p" is forbidden: a mirror pod may not reference service accounts`,
	}, {
		name: "a Pod gets its namespace's LimitRange defaults", resource: "pods",
		objects: []string{limitRange},
		object:  pod("limited", `"containers":[{"name":"c","image":"nginx"},{"name":"d","image":"nginx","resources":{"limits":{"cpu":"1"}}}]`),
		want: map[string]any{
			"spec.containers.0.resources.limits.cpu": "500m", "spec.containers.0.resources.limits.memory": "256Mi",
			"spec.containers.0.resources.requests.cpu": "100m", "spec.containers.0.resources.requests.memory": "256Mi",
			"spec.containers.1.resources.limits.cpu": "1", "spec.containers.1.resources.requests.cpu": "1",
			"metadata.annotations.kubernetes\\.io/limit-ranger": "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c; memory request for container d; memory limit for container d",
		},
		changed: []string{"LimitRanger", "ServiceAccount", "Priority", "DefaultTolerationSeconds"},
	}, {
		name: "a Pod in a terminating namespace is refused", resource: "pods",
		objects: []string{terminating},
		object:  pod("leaving", `"containers":[{"name":"c","image":"nginx"}]`),
		denied:  `pods "p" is forbidden: unable to create new content in namespace leaving because it is being terminated`,
	}, {
		name: "a Pod with a RuntimeClass gets its overhead and scheduling", resource: "pods",
		objects: []string{kataRC},
		object:  pod("ns", `"runtimeClassName":"kata","containers":[{"name":"c","image":"nginx"}]`),
		want: map[string]any{
			"spec.overhead.cpu": "250m", "spec.overhead.memory": "120Mi",
			"spec.nodeSelector.runtime": "kata", "spec.tolerations.2.key": "kata",
		},
		changed: []string{"ServiceAccount", "Priority", "DefaultTolerationSeconds", "RuntimeClass"},
	}, {
		name: "a Pod whose overhead differs from its RuntimeClass's is refused", resource: "pods",
		objects: []string{kataRC},
		object:  pod("ns", `"runtimeClassName":"kata","overhead":{"cpu":"1"},"containers":[{"name":"c","image":"nginx"}]`),
		denied:  `pods "p" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`,
	}, {
		name: "a Pod whose nodeSelector conflicts with its RuntimeClass's is refused", resource: "pods",
		objects: []string{kataRC},
		object:  pod("ns", `"runtimeClassName":"kata","nodeSelector":{"runtime":"runc"},"containers":[{"name":"c","image":"nginx"}]`),
		denied:  `pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; pod.spec.nodeSelector[runtime] = runc`,
	}, {
		name: "a Pod of a missing RuntimeClass is refused", resource: "pods",
		object: pod("ns", `"runtimeClassName":"gvisor","containers":[{"name":"c","image":"nginx"}]`),
		denied: `pods "p" is forbidden: pod rejected: RuntimeClass "gvisor" not found`,
	}, {
		name: "a Pod bound to a Node gets the Node's topology labels", resource: "pods",
		objects: []string{zonedNode},
		object:  pod("ns", `"nodeName":"n1","containers":[{"name":"c","image":"nginx"}]`),
		want: map[string]any{
			"metadata.labels.topology\\.kubernetes\\.io/zone": "z1", "metadata.labels.topology\\.kubernetes\\.io/region": "r1",
			"metadata.labels.other": nil,
		},
		changed: []string{"ServiceAccount", "Priority", "DefaultTolerationSeconds", "PodTopologyLabels"},
	}, {
		name: "a Pod with ServiceAccount and Priority disabled", resource: "pods",
		flags:  Flags{Disable: []string{"ServiceAccount", "Priority"}},
		object: pod("ns", `"containers":[{"name":"c","image":"nginx"}]`),
		want:   map[string]any{"spec.serviceAccountName": nil, "spec.volumes": nil, "spec.priority": nil, "spec.tolerations.0.key": "node.kubernetes.io/not-ready"},
	}, {
		name: "AlwaysPullImages enabled", resource: "pods",
		flags:  Flags{Enable: []string{"AlwaysPullImages"}},
		object: pod("ns", `"containers":[{"name":"c","image":"nginx","imagePullPolicy":"IfNotPresent"}]`),
		want:   map[string]any{"spec.containers.0.imagePullPolicy": "Always"},
	}, {
		name: "only DefaultTolerationSeconds", resource: "pods",
		flags:   Flags{Only: []string{"DefaultTolerationSeconds"}},
		object:  pod("ns", `"containers":[{"name":"c","image":"nginx"}]`),
		want:    map[string]any{"spec.serviceAccountName": nil, "spec.tolerations.0.key": "node.kubernetes.io/not-ready"},
		changed: []string{"DefaultTolerationSeconds"},
	}, {
		name: "a PVC without a class gets the default StorageClass and the protection finalizer", resource: "persistentvolumeclaims",
		objects: []string{defaultSC, otherSC},
		object:  `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"p","namespace":"ns"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
		want:    map[string]any{"spec.storageClassName": "fast", "metadata.finalizers.0": "kubernetes.io/pvc-protection"},
		changed: []string{"DefaultStorageClass", "StorageObjectInUseProtection"},
	}, {
		name: "a PVC with an empty class keeps it", resource: "persistentvolumeclaims",
		objects: []string{defaultSC},
		object:  `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"p","namespace":"ns"},"spec":{"storageClassName":"","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
		want:    map[string]any{"spec.storageClassName": "", "metadata.finalizers.0": "kubernetes.io/pvc-protection"},
	}, {
		name: "a PVC without a class and no default StorageClass", resource: "persistentvolumeclaims",
		objects: []string{otherSC},
		object:  `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"p","namespace":"ns"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
		want:    map[string]any{"spec.storageClassName": nil},
	}, {
		name: "a PersistentVolume gets the protection finalizer", resource: "persistentvolumes",
		object: `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"}}}`,
		want:   map[string]any{"metadata.finalizers.0": "kubernetes.io/pv-protection"},
	}, {
		name: "an Ingress without a class gets the default IngressClass", resource: "ingresses",
		objects: []string{defaultIC},
		object:  `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"i","namespace":"ns"},"spec":{"defaultBackend":{"service":{"name":"s","port":{"number":80}}}}}`,
		want:    map[string]any{"spec.ingressClassName": "nginx"},
		changed: []string{"DefaultIngressClass"},
	}, {
		name: "an Ingress with the class annotation keeps it", resource: "ingresses",
		objects: []string{defaultIC},
		object:  `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"i","namespace":"ns","annotations":{"kubernetes.io/ingress.class":"traefik"}},"spec":{"defaultBackend":{"service":{"name":"s","port":{"number":80}}}}}`,
		want:    map[string]any{"spec.ingressClassName": nil},
	}, {
		name: "a new Node is tainted not-ready", resource: "nodes",
		object:  `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"},"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`,
		want:    map[string]any{"spec.taints.0.key": "dedicated", "spec.taints.1.key": "node.kubernetes.io/not-ready", "spec.taints.1.effect": "NoSchedule"},
		changed: []string{"TaintNodesByCondition"},
	}, {
		name: "a ConfigMap passes unchanged", resource: "configmaps",
		object: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"},"data":{"a":"b"}}`,
		want:   map[string]any{"data.a": "b"},
	}}
}

// obj decodes JSON as objects reach the engine (int64 and float64).
func obj(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return m
}

// pluginRequest decodes c's object and its request.
func pluginRequest(t *testing.T, s *scheme.Scheme, c pluginCase) (scheme.Request, map[string]any) {
	t.Helper()
	o := obj(t, c.object)
	apiVersion, kind := o["apiVersion"].(string), o["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		t.Fatal(err)
	}
	md := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	req := scheme.Request{Operation: admission.Create, Kind: gv.WithKind(kind), Resource: gv.WithResource(c.resource), Namespace: ns, Name: md["name"].(string)}
	decoded, _, err := s.DecodeRequest(o, req.Kind)
	if err != nil {
		t.Fatal(err)
	}
	return req, decoded
}

// pluginChain is a Chain with c's plugins holding c's objects.
func pluginChain(t *testing.T, c pluginCase) *Chain {
	t.Helper()
	st := NewStores(scheme.New())
	for _, o := range c.objects {
		if ok, err := st.Add(obj(t, o)); err != nil || !ok {
			t.Fatalf("adding %s: %v, %v", o, ok, err)
		}
	}
	p, err := New(st, c.flags)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var pluginUser = &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}

// TestAdmitPlugins: kube-apiserver's admission plugins before MAP, as
// requests meet them in a default kube-apiserver (or with other flags).
func TestAdmitPlugins(t *testing.T) {
	for _, c := range pluginCases() {
		t.Run(c.name, func(t *testing.T) {
			p := pluginChain(t, c)
			req, decoded := pluginRequest(t, p.stores.scheme, c)
			got, steps, err := p.AdmitSteps(context.Background(), req, decoded, nil, pluginUser, false, true)
			if c.denied != "" {
				var status *apierrors.StatusError
				if !errors.As(err, &status) || status.ErrStatus.Code != 403 || status.ErrStatus.Message != c.denied {
					t.Fatalf("got %v, want the 403 %q", err, c.denied)
				}
				if last := steps[len(steps)-1]; last.Err != err {
					t.Errorf("the last step %+v is not the refusal", last)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range c.want {
				v, ok := valueAtPath(got, path)
				switch {
				case want == nil && ok:
					t.Errorf("%s = %v, want it absent", path, v)
				case want != nil && !reflect.DeepEqual(v, want):
					t.Errorf("%s = %#v, want %#v", path, v, want)
				}
			}
			if c.changed != nil {
				var changed []string
				for _, st := range steps {
					if st.Changed {
						changed = append(changed, st.Plugin)
					}
				}
				if !reflect.DeepEqual(changed, c.changed) {
					t.Errorf("changed by %v, want %v (steps %+v)", changed, c.changed, steps)
				}
				// Without changes asked, the same plugins, the same object,
				// and no comparison.
				_, decoded := pluginRequest(t, p.stores.scheme, c)
				again, cheap, err := p.AdmitSteps(context.Background(), req, decoded, nil, pluginUser, false, false)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(again, got) {
					t.Errorf("without changes: object %v, want %v", again, got)
				}
				if len(cheap) != len(steps) {
					t.Fatalf("without changes: steps %+v, want the plugins of %+v", cheap, steps)
				}
				for i, st := range cheap {
					if st.Plugin != steps[i].Plugin || st.Changed || st.Err != nil {
						t.Errorf("without changes: step %+v, want plugin %s, not changed", st, steps[i].Plugin)
					}
				}
			}
		})
	}
}

// valueAtPath is the value at path in o: keys separated by dots (escaped "\."),
// list indexes as numbers.
func valueAtPath(o any, path string) (any, bool) {
	var keys []string
	cur := ""
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path):
			cur += string(path[i+1])
			i++
		case path[i] == '.':
			keys, cur = append(keys, cur), ""
		default:
			cur += string(path[i])
		}
	}
	keys = append(keys, cur)
	for _, k := range keys {
		switch v := o.(type) {
		case map[string]any:
			var ok bool
			if o, ok = v[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(v) {
				return nil, false
			}
			o = v[i]
		default:
			return nil, false
		}
	}
	return o, true
}

// TestEnabledAdmissionPlugins: kube-apiserver's flags, and its refusals.
func TestEnabledAdmissionPlugins(t *testing.T) {
	names := func(ps []Plugin) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		name  string
		flags Flags
		want  string
		err   string
	}{
		{name: "the defaults", want: "NamespaceLifecycle,LimitRanger,ServiceAccount,TaintNodesByCondition,PodSecurity,Priority,DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PodGroupProtection,PersistentVolumeClaimResize,RuntimeClass,CertificateApproval,CertificateSigning,ClusterTrustBundleAttest,CertificateSubjectRestriction,DefaultIngressClass,PodTopologyLabels,NodeDeclaredFeatureValidator,PodResizeValidator,MutatingAdmissionPolicy,MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,ResourceQuota"},
		{name: "enabled in any order run in the chain's", flags: Flags{Only: []string{"DefaultTolerationSeconds", "AlwaysPullImages", "NamespaceLifecycle"}}, want: "NamespaceLifecycle,AlwaysPullImages,DefaultTolerationSeconds"},
		{name: "enable and disable", flags: Flags{Enable: []string{"PodNodeSelector"}, Disable: []string{"ServiceAccount", "ResourceQuota", "PodSecurity", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "NodeDeclaredFeatureValidator", "PodResizeValidator", "PersistentVolumeClaimResize"}},
			want: "NamespaceLifecycle,LimitRanger,TaintNodesByCondition,PodNodeSelector,Priority,DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PodGroupProtection,RuntimeClass,DefaultIngressClass,PodTopologyLabels,MutatingAdmissionPolicy"},
		{name: "unknown names", flags: Flags{Enable: []string{"Bogus"}, Disable: []string{"Nope"}}, err: "enable-admission-plugins plugin \"Bogus\" is unknown\ndisable-admission-plugins plugin \"Nope\" is unknown"},
		{name: "overlap", flags: Flags{Enable: []string{"Priority", "AlwaysPullImages"}, Disable: []string{"Priority", "AlwaysPullImages"}}, err: "[AlwaysPullImages Priority] in enable-admission-plugins and disable-admission-plugins overlapped"},
		{name: "exclusive flags", flags: Flags{Only: []string{"Priority"}, Disable: []string{"ServiceAccount"}}, err: "admission-plugins and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive"},
		{name: "a plugin that cannot run offline", flags: Flags{Enable: []string{"NodeRestriction"}}, err: `admission plugin "NodeRestriction" cannot run offline: it restricts what kubelets (system:node:NAME users) may do to their Node and the Pods bound to it, which an offline run does not hold`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Enabled(c.flags)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != c.want {
				t.Errorf("got %s\nwant %s", names(got), c.want)
			}
		})
	}
	p, err := New(NewStores(scheme.New()), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := p.Names()
	if err != nil {
		t.Fatal(err)
	}
	if want := "NamespaceLifecycle,LimitRanger,ServiceAccount,TaintNodesByCondition,Priority,DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PodGroupProtection,RuntimeClass,DefaultIngressClass,PodTopologyLabels"; strings.Join(run, ",") != want {
		t.Errorf("a default Chain runs %v, want %s", run, want)
	}
}
