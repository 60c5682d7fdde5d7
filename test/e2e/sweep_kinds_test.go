//go:build linux

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sweepKind is a resource of the sweep: a valid object of its kind, the
// perturbations of its own fields (beside genericPerts) and its
// subresources with a strategy.
type sweepKind struct {
	id         string // short, unique: the prefix of its cases' ids
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	object     string // YAML; the namespace is set by the sweep
	perts      []sweepPert
	subs       []sweepSub
	// subset: swept by default (CI); the others with MUTATIS_E2E_SWEEP=all.
	subset bool
	// noCreate: only the subresources are swept.
	noCreate bool
	// noUpdate: the perturbations are not also swept on an UPDATE of a
	// stored object, with the reason in a comment (the stored object
	// would change what other cases meet, or its name is fixed).
	noUpdate bool
	// updateParent is the object stored for the UPDATE cases when not
	// object.
	updateParent string
	// fixedName: the object's name is part of its validity (a CRD, an
	// APIService): a subresource's parent keeps it (one case).
	fixedName bool
}

func (k *sweepKind) gvk() schema.GroupVersionKind { return k.gvr.GroupVersion().WithKind(k.kind) }

// sweepSub is a subresource with a strategy, swept with an UPDATE of a
// stored parent (the kind's object, or parent).
type sweepSub struct {
	name   string
	subset bool
	parent string // YAML of the parent when not the kind's object
	// parentName is the parent's name when the kind has a fixed one.
	parentName string
	// notDryRun: the update is real (kube-apiserver answers a dry run of
	// namespaces/finalize with 405 MethodNotAllowed); each case has its
	// own parent.
	notDryRun bool
	// existing: the parent (parentName) is one kube-apiserver creates
	// itself; the sweep does not create it.
	existing bool
	// prepare brings the stored parent to the state the update needs
	// (e.g. a Pod bound to a node for pods/resize).
	prepare func(ctx context.Context, c *Cluster, stored *unstructured.Unstructured) (*unstructured.Unstructured, error)
	// change is the request's own change of the subresource's object,
	// beside the policy's (nil: the object as read).
	change func(obj map[string]any)
	perts  []sweepPert
}

// sweepPert is one policy's mutation: it changes one field, of the kind
// of sub-structure its name says (scalar, map, struct, keyed list item,
// set, atomic list), by ApplyConfiguration (-ac) or JSONPatch (-jp).
type sweepPert struct {
	name, patch, expr string
}

func ac(name, expr string) sweepPert { return sweepPert{name, "ApplyConfiguration", expr} }
func jp(name, expr string) sweepPert { return sweepPert{name, "JSONPatch", expr} }

// genericPerts change the metadata every kind has: a label (a map entry,
// ApplyConfiguration), an annotation (JSONPatch), a finalizer (a set).
var genericPerts = []sweepPert{
	ac("map-ac", `Object{metadata: Object.metadata{labels: {"sweep.mutatis.dev/added": "yes"}}}`),
	jp("map-jp", `[JSONPatch{op: "add", path: "/metadata/annotations", value: {"sweep.mutatis.dev/added": "yes"}}]`),
	ac("set-ac", `Object{metadata: Object.metadata{finalizers: ["sweep.mutatis.dev/keep"]}}`),
}

// statusLabel is the perturbation of a subresource's metadata: a label,
// which the strategy of a status-like subresource drops.
var statusLabel = ac("map-ac", `Object{metadata: Object.metadata{labels: {"sweep.mutatis.dev/added": "yes"}}}`)

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// serviceParent is a Service stored for a subresource case: its cluster IP
// is allocated (each case has its own Service).
const serviceParent = `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {selector: {app: web}, ports: [{name: http, port: 80}]}}`

const podSpec = `{containers: [{name: c, image: nginx}]}`

// sweepCRDs are created before the sweep; the custom resource kind sweeps
// their first.
var sweepCRDs = []string{`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.sweep.mutatis.dev}
spec:
  group: sweep.mutatis.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 0, maximum: 10}
              mode: {type: string, default: fast}
              tags: {type: array, items: {type: string}, x-kubernetes-list-type: atomic}
              items:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, required: [name], properties: {name: {type: string}, value: {type: string}}}
              params: {type: object, additionalProperties: {type: string}}
              nested: {type: object, properties: {a: {type: string}, b: {type: string}}}
          status:
            type: object
            properties:
              phase: {type: string}
`}

// sweepKinds are the resources of the sweep.
func sweepKinds() []*sweepKind {
	return []*sweepKind{
		{id: "pods", gvr: gvr("", "v1", "pods"), kind: "Pod", namespaced: true, subset: true,
			object: `{apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: c, image: nginx, ports: [{containerPort: 80}]}]}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{restartPolicy: "Never"}}`),
				ac("struct-ac", `Object{spec: Object.spec{securityContext: Object.spec.securityContext{runAsNonRoot: true}}}`),
				ac("keyed-ac", `Object{spec: Object.spec{containers: [Object.spec.containers{name: "side", image: "busybox", resources: Object.spec.containers.resources{limits: {"cpu": "100m"}}}]}}`),
				jp("keyed-jp", `[JSONPatch{op: "add", path: "/spec/containers/-", value: {"name": "side", "image": "busybox"}}]`),
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/spec/containers/0/args", value: ["-v"]}]`),
				jp("scalar-jp", `[JSONPatch{op: "add", path: "/spec/activeDeadlineSeconds", value: -1}]`),
			},
			subs: []sweepSub{
				{name: "status", subset: true, perts: []sweepPert{
					statusLabel,
					ac("scalar-ac", `Object{status: Object.status{message: "swept"}}`),
					jp("keyed-jp", `[JSONPatch{op: "add", path: "/status/conditions", value: [{"type": "Ready", "status": "True"}]}]`),
				}},
				{name: "ephemeralcontainers", perts: []sweepPert{
					statusLabel,
					ac("keyed-ac", `Object{spec: Object.spec{ephemeralContainers: [Object.spec.ephemeralContainers{name: "debug", image: "busybox"}]}}`),
				}},
				{name: "resize", perts: []sweepPert{
					statusLabel,
					ac("keyed-ac", `Object{spec: Object.spec{containers: [Object.spec.containers{name: "c", resources: Object.spec.containers.resources{requests: {"cpu": "200m"}}}]}}`),
				}},
			}},
		{id: "configmaps", gvr: gvr("", "v1", "configmaps"), kind: "ConfigMap", namespaced: true, subset: true,
			object: `{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}, data: {a: "1"}}`,
			perts: []sweepPert{
				ac("mapdata-ac", `Object{data: {"b": "2"}}`),
				jp("scalar-jp", `[JSONPatch{op: "replace", path: "/data/a", value: "2"}]`),
				ac("scalar-ac", `Object{immutable: true}`),
				jp("badkey-jp", `[JSONPatch{op: "add", path: "/data/bad key", value: "x"}]`),
			}},
		{id: "services", gvr: gvr("", "v1", "services"), kind: "Service", namespaced: true, subset: true, updateParent: serviceParent,
			object: `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {clusterIP: 10.0.0.50, selector: {app: web}, ports: [{name: http, port: 80}]}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{sessionAffinity: "ClientIP"}}`),
				ac("keyed-ac", `Object{spec: Object.spec{ports: [Object.spec.ports{name: "https", port: 443}]}}`),
				jp("scalar-jp", `[JSONPatch{op: "replace", path: "/spec/type", value: "ExternalName"}, JSONPatch{op: "add", path: "/spec/externalName", value: "example.com"}]`),
				ac("atomic-ac", `Object{spec: Object.spec{externalIPs: ["192.0.2.1"]}}`),
				jp("map-selector-jp", `[JSONPatch{op: "add", path: "/spec/selector/tier", value: "front"}]`),
				ac("headless-ac", `Object{spec: Object.spec{clusterIP: "None"}}`),
			},
			subs: []sweepSub{
				{name: "status", parent: serviceParent, perts: []sweepPert{
					statusLabel,
					ac("struct-ac", `Object{status: Object.status{loadBalancer: Object.status.loadBalancer{ingress: [Object.status.loadBalancer.ingress{ip: "192.0.2.9"}]}}}`),
				}},
			}},
		{id: "deployments", gvr: gvr("apps", "v1", "deployments"), kind: "Deployment", namespaced: true, subset: true,
			object: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: ` + podSpec + `}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{replicas: 3}}`),
				ac("struct-ac", `Object{spec: Object.spec{strategy: Object.spec.strategy{type: "Recreate"}}}`),
				ac("keyed-ac", `Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "c", env: [Object.spec.template.spec.containers.env{name: "A", value: "1"}]}]}}}}`),
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/spec/template/spec/containers/0/command", value: ["nginx"]}]`),
				jp("map-jp-mismatch", `[JSONPatch{op: "replace", path: "/spec/template/metadata/labels/app", value: "other"}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("scalar-ac", `Object{status: Object.status{observedGeneration: 7}}`)}},
				{name: "scale", subset: true, perts: []sweepPert{
					ac("scalar-ac", `Object{spec: Object.spec{replicas: 4}}`),
					statusLabel,
				}},
			}},
		{id: "gadgets", gvr: gvr("sweep.mutatis.dev", "v1", "gadgets"), kind: "Gadget", namespaced: true, subset: true,
			object: `{apiVersion: sweep.mutatis.dev/v1, kind: Gadget, metadata: {name: g}, spec: {size: 1, tags: [a], items: [{name: x, value: "1"}], params: {p: q}, nested: {a: "1"}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{size: 3}}`),
				ac("scalar-invalid-ac", `Object{spec: Object.spec{size: 30}}`),
				ac("mapentry-ac", `Object{spec: Object.spec{params: {"r": "s"}}}`),
				ac("struct-ac", `Object{spec: Object.spec{nested: Object.spec.nested{b: "2"}}}`),
				ac("keyed-ac", `Object{spec: Object.spec{items: [Object.spec.items{name: "y", value: "2"}]}}`),
				ac("atomic-ac", `Object{spec: Object.spec{tags: ["b"]}}`),
				jp("pruned-jp", `[JSONPatch{op: "add", path: "/spec/extra", value: "dropped"}]`),
				jp("default-jp", `[JSONPatch{op: "add", path: "/spec/nested", value: {}}]`),
				jp("status-jp", `[JSONPatch{op: "add", path: "/status", value: {"phase": "Done"}}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("scalar-ac", `Object{status: Object.status{phase: "Done"}}`)}},
			}},
		{id: "replicasets", gvr: gvr("apps", "v1", "replicasets"), kind: "ReplicaSet", namespaced: true,
			object: `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: web}, spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: ` + podSpec + `}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{minReadySeconds: 5}}`),
				jp("keyed-jp", `[JSONPatch{op: "add", path: "/spec/template/spec/containers/-", value: {"name": "side", "image": "busybox"}}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("scalar-ac", `Object{status: Object.status{observedGeneration: 7}}`)}},
				{name: "scale", perts: []sweepPert{ac("scalar-ac", `Object{spec: Object.spec{replicas: 4}}`)}},
			}},
		{id: "statefulsets", gvr: gvr("apps", "v1", "statefulsets"), kind: "StatefulSet", namespaced: true,
			object: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: web}, spec: {serviceName: web, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: ` + podSpec + `}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{podManagementPolicy: "Parallel"}}`),
				ac("keyed-ac", `Object{spec: Object.spec{volumeClaimTemplates: [Object.spec.volumeClaimTemplates{metadata: Object.spec.volumeClaimTemplates.metadata{name: "data"}, spec: Object.spec.volumeClaimTemplates.spec{accessModes: ["ReadWriteOnce"], resources: Object.spec.volumeClaimTemplates.spec.resources{requests: {"storage": "1Gi"}}}}]}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("scalar-ac", `Object{status: Object.status{observedGeneration: 7}}`)}},
				{name: "scale", perts: []sweepPert{ac("scalar-ac", `Object{spec: Object.spec{replicas: 4}}`)}},
			}},
		{id: "daemonsets", gvr: gvr("apps", "v1", "daemonsets"), kind: "DaemonSet", namespaced: true,
			object: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: web}, spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: ` + podSpec + `}}}`,
			perts: []sweepPert{
				ac("struct-ac", `Object{spec: Object.spec{updateStrategy: Object.spec.updateStrategy{type: "OnDelete"}}}`),
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/spec/template/spec/containers/0/args", value: ["x"]}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("scalar-ac", `Object{status: Object.status{observedGeneration: 7}}`)}},
			}},
		{id: "controllerrevisions", gvr: gvr("apps", "v1", "controllerrevisions"), kind: "ControllerRevision", namespaced: true,
			object: `{apiVersion: apps/v1, kind: ControllerRevision, metadata: {name: rev}, revision: 1, data: {a: 1}}`,
			perts: []sweepPert{
				jp("scalar-jp", `[JSONPatch{op: "replace", path: "/revision", value: 2}]`),
				ac("scalar-invalid-ac", `Object{revision: -1}`),
			}},
		{id: "jobs", gvr: gvr("batch", "v1", "jobs"), kind: "Job", namespaced: true,
			object: `{apiVersion: batch/v1, kind: Job, metadata: {name: job}, spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{backoffLimit: 2}}`),
				ac("struct-ac", `Object{spec: Object.spec{podFailurePolicy: Object.spec.podFailurePolicy{rules: [Object.spec.podFailurePolicy.rules{action: "Ignore", onPodConditions: [Object.spec.podFailurePolicy.rules.onPodConditions{type: "DisruptionTarget"}]}]}}}`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/spec/template/spec/restartPolicy", value: "Always"}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "cronjobs", gvr: gvr("batch", "v1", "cronjobs"), kind: "CronJob", namespaced: true,
			object: `{apiVersion: batch/v1, kind: CronJob, metadata: {name: cron}, spec: {schedule: "*/5 * * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox}]}}}}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{timeZone: "Etc/UTC"}}`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/spec/schedule", value: "never"}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "namespaces", gvr: gvr("", "v1", "namespaces"), kind: "Namespace",
			object: `{apiVersion: v1, kind: Namespace, metadata: {name: swept}}`,
			perts: []sweepPert{
				ac("set-spec-ac", `Object{spec: Object.spec{finalizers: ["example.com/x"]}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
				{name: "finalize", notDryRun: true, perts: []sweepPert{statusLabel, ac("set-ac", `Object{spec: Object.spec{finalizers: ["example.com/x"]}}`)}},
			}},
		{id: "nodes", gvr: gvr("", "v1", "nodes"), kind: "Node",
			object: `{apiVersion: v1, kind: Node, metadata: {name: node-a}, spec: {podCIDR: 10.1.0.0/24}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{unschedulable: true}}`),
				ac("atomic-ac", `Object{spec: Object.spec{taints: [Object.spec.taints{key: "k", effect: "NoSchedule"}]}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("map-ac-capacity", `Object{status: Object.status{capacity: {"pods": "10"}}}`)}},
			}},
		{id: "persistentvolumes", gvr: gvr("", "v1", "persistentvolumes"), kind: "PersistentVolume",
			object: `{apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-a}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/pv}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{storageClassName: "fast"}}`),
				jp("atomic-jp", `[JSONPatch{op: "replace", path: "/spec/accessModes", value: ["ReadOnlyMany"]}]`),
				jp("mapentry-jp", `[JSONPatch{op: "replace", path: "/spec/capacity/storage", value: "2Gi"}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("scalar-ac", `Object{status: Object.status{message: "swept"}}`)}},
			}},
		{id: "persistentvolumeclaims", gvr: gvr("", "v1", "persistentvolumeclaims"), kind: "PersistentVolumeClaim", namespaced: true,
			object: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{storageClassName: "fast"}}`),
				jp("mapentry-jp", `[JSONPatch{op: "replace", path: "/spec/resources/requests/storage", value: "2Gi"}]`),
				ac("atomic-ac", `Object{spec: Object.spec{accessModes: ["ReadWriteMany"]}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("scalar-ac", `Object{status: Object.status{phase: "Bound"}}`)}},
			}},
		{id: "podtemplates", gvr: gvr("", "v1", "podtemplates"), kind: "PodTemplate", namespaced: true,
			object: `{apiVersion: v1, kind: PodTemplate, metadata: {name: tpl}, template: {metadata: {labels: {app: web}}, spec: ` + podSpec + `}}`,
			perts: []sweepPert{
				ac("keyed-ac", `Object{template: Object.template{spec: Object.template.spec{containers: [Object.template.spec.containers{name: "c", env: [Object.template.spec.containers.env{name: "A", value: "1"}]}]}}}`),
			}},
		{id: "replicationcontrollers", gvr: gvr("", "v1", "replicationcontrollers"), kind: "ReplicationController", namespaced: true,
			object: `{apiVersion: v1, kind: ReplicationController, metadata: {name: rc}, spec: {selector: {app: web}, template: {metadata: {labels: {app: web}}, spec: ` + podSpec + `}}}`,
			perts: []sweepPert{
				jp("scalar-jp", `[JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`),
				jp("mapentry-jp", `[JSONPatch{op: "add", path: "/spec/selector/tier", value: "x"}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
				{name: "scale", perts: []sweepPert{ac("scalar-ac", `Object{spec: Object.spec{replicas: 4}}`)}},
			}},
		// noUpdate: the quota plugin would refuse what the namespace's later requests create.
		{noUpdate: true, id: "resourcequotas", gvr: gvr("", "v1", "resourcequotas"), kind: "ResourceQuota", namespaced: true,
			object: `{apiVersion: v1, kind: ResourceQuota, metadata: {name: rq}, spec: {hard: {pods: "10"}}}`,
			perts: []sweepPert{
				ac("mapentry-ac", `Object{spec: Object.spec{hard: {"secrets": "5"}}}`),
				ac("atomic-ac", `Object{spec: Object.spec{scopes: ["BestEffort"]}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("map-ac-hard", `Object{status: Object.status{hard: {"pods": "10"}}}`)}},
			}},
		// noUpdate: its defaults would apply to the Pods of the namespace.
		{noUpdate: true, id: "limitranges", gvr: gvr("", "v1", "limitranges"), kind: "LimitRange", namespaced: true,
			object: `{apiVersion: v1, kind: LimitRange, metadata: {name: lr}, spec: {limits: [{type: Container, default: {cpu: 100m}}]}}`,
			perts: []sweepPert{
				jp("mapentry-jp", `[JSONPatch{op: "add", path: "/spec/limits/0/default/memory", value: "64Mi"}]`),
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/spec/limits/-", value: {"type": dyn("Pod"), "max": {"cpu": "1"}}}]`),
			}},
		{id: "secrets", gvr: gvr("", "v1", "secrets"), kind: "Secret", namespaced: true,
			object: `{apiVersion: v1, kind: Secret, metadata: {name: s}, type: Opaque, stringData: {a: "1"}}`,
			perts: []sweepPert{
				ac("stringdata-ac", `Object{stringData: {"b": "2"}}`),
				jp("mapentry-jp", `[JSONPatch{op: "add", path: "/data/c", value: "Mw=="}]`),
				ac("scalar-invalid-ac", `Object{type: "kubernetes.io/tls"}`),
			}},
		{id: "serviceaccounts", gvr: gvr("", "v1", "serviceaccounts"), kind: "ServiceAccount", namespaced: true,
			object: `{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{automountServiceAccountToken: false}`),
				ac("atomic-ac", `Object{imagePullSecrets: [Object.imagePullSecrets{name: "reg"}]}`),
			}},
		{id: "endpoints", gvr: gvr("", "v1", "endpoints"), kind: "Endpoints", namespaced: true,
			object: `{apiVersion: v1, kind: Endpoints, metadata: {name: ep}, subsets: [{addresses: [{ip: 10.1.2.3}], ports: [{port: 80}]}]}`,
			perts: []sweepPert{
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/subsets/0/addresses/-", value: {"ip": "10.1.2.4"}}]`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/subsets/0/ports/0/port", value: 0}]`),
			}},
		{id: "events", gvr: gvr("", "v1", "events"), kind: "Event", namespaced: true,
			object: `{apiVersion: v1, kind: Event, metadata: {name: ev}, involvedObject: {kind: Pod, name: web, namespace: sweep}, reason: Started, message: hi, type: Normal}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{message: "swept"}`),
				ac("struct-ac", `Object{source: Object.source{component: "sweeper"}}`),
			}},
		{id: "events.k8s.io", gvr: gvr("events.k8s.io", "v1", "events"), kind: "Event", namespaced: true,
			object: `{apiVersion: events.k8s.io/v1, kind: Event, metadata: {name: ev2}, eventTime: "2026-01-01T00:00:00.000000Z", reportingController: example.com/c, reportingInstance: i, action: Create, reason: Started, type: Normal, regarding: {kind: Pod, name: web, namespace: sweep}, note: hi}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{note: "swept"}`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/type", value: "Odd"}]`),
			}},
		{id: "hpa", gvr: gvr("autoscaling", "v2", "horizontalpodautoscalers"), kind: "HorizontalPodAutoscaler", namespaced: true,
			object: `{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: hpa}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 5, metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{minReplicas: 2}}`),
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/spec/metrics/-", value: {"type": dyn("Resource"), "resource": {"name": dyn("memory"), "target": {"type": dyn("Utilization"), "averageUtilization": 60}}}}]`),
				ac("struct-ac", `Object{spec: Object.spec{behavior: Object.spec.behavior{scaleDown: Object.spec.behavior.scaleDown{stabilizationWindowSeconds: 60}}}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "poddisruptionbudgets", gvr: gvr("policy", "v1", "poddisruptionbudgets"), kind: "PodDisruptionBudget", namespaced: true,
			object: `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: pdb}, spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}}`,
			perts: []sweepPert{
				ac("scalar-invalid-ac", `Object{spec: Object.spec{maxUnavailable: 1}}`),
				jp("mapentry-jp", `[JSONPatch{op: "add", path: "/spec/selector/matchLabels/tier", value: "x"}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "ingresses", gvr: gvr("networking.k8s.io", "v1", "ingresses"), kind: "Ingress", namespaced: true,
			object: `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: web}, spec: {rules: [{host: a.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{ingressClassName: "nginx"}}`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/spec/rules/0/host", value: "Bad_Host"}]`),
				ac("atomic-ac", `Object{spec: Object.spec{tls: [Object.spec.tls{hosts: ["a.example.com"], secretName: "tls"}]}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "ingressclasses", gvr: gvr("networking.k8s.io", "v1", "ingressclasses"), kind: "IngressClass",
			object: `{apiVersion: networking.k8s.io/v1, kind: IngressClass, metadata: {name: nginx}, spec: {controller: example.com/ingress}}`,
			perts: []sweepPert{
				jp("scalar-jp", `[JSONPatch{op: "replace", path: "/spec/controller", value: "example.com/other"}]`),
				ac("struct-ac", `Object{spec: Object.spec{parameters: Object.spec.parameters{kind: "Conf", name: "c", scope: "Cluster"}}}`),
			}},
		{id: "networkpolicies", gvr: gvr("networking.k8s.io", "v1", "networkpolicies"), kind: "NetworkPolicy", namespaced: true,
			object: `{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, policyTypes: [Ingress]}}`,
			perts: []sweepPert{
				ac("atomic-ac", `Object{spec: Object.spec{ingress: [Object.spec.ingress{ports: [Object.spec.ingress.ports{port: 80}]}]}}`),
				jp("atomic-invalid-jp", `[JSONPatch{op: "replace", path: "/spec/policyTypes", value: ["Sideways"]}]`),
			}},
		// noUpdate: its name is an IP address.
		{noUpdate: true, id: "ipaddresses", gvr: gvr("networking.k8s.io", "v1", "ipaddresses"), kind: "IPAddress",
			object: `{apiVersion: networking.k8s.io/v1, kind: IPAddress, metadata: {name: 10.0.0.77}, spec: {parentRef: {group: "", resource: services, name: web, namespace: sweep}}}`,
			perts: []sweepPert{
				jp("scalar-jp", `[JSONPatch{op: "replace", path: "/spec/parentRef/name", value: "other"}]`),
			}},
		// noUpdate: another range would change what the Service cases allocate.
		{noUpdate: true, id: "servicecidrs", gvr: gvr("networking.k8s.io", "v1", "servicecidrs"), kind: "ServiceCIDR",
			object: `{apiVersion: networking.k8s.io/v1, kind: ServiceCIDR, metadata: {name: extra}, spec: {cidrs: [10.96.0.0/28]}}`,
			perts: []sweepPert{
				jp("atomic-jp", `[JSONPatch{op: "replace", path: "/spec/cidrs", value: ["10.97.0.0/28"]}]`),
			},
			subs: []sweepSub{
				// The default ServiceCIDR: another one would change the
				// ranges the Service cases allocate from.
				{name: "status", existing: true, parentName: "kubernetes", perts: []sweepPert{statusLabel}},
			}},
		{id: "runtimeclasses", gvr: gvr("node.k8s.io", "v1", "runtimeclasses"), kind: "RuntimeClass",
			object: `{apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: rt}, handler: runc}`,
			perts: []sweepPert{
				ac("struct-ac", `Object{overhead: Object.overhead{podFixed: {"cpu": "10m"}}}`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/handler", value: "Bad Handler"}]`),
			}},
		{id: "clusterroles", gvr: gvr("rbac.authorization.k8s.io", "v1", "clusterroles"), kind: "ClusterRole",
			object: `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: reader}, rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]}`,
			perts: []sweepPert{
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/rules/-", value: {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}}]`),
			}},
		{id: "clusterrolebindings", gvr: gvr("rbac.authorization.k8s.io", "v1", "clusterrolebindings"), kind: "ClusterRoleBinding",
			object: `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: reader}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}, subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]}`,
			perts: []sweepPert{
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/subjects/-", value: {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}}]`),
			}},
		{id: "roles", gvr: gvr("rbac.authorization.k8s.io", "v1", "roles"), kind: "Role", namespaced: true,
			object: `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: reader}, rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]}`,
			perts: []sweepPert{
				jp("atomic-jp", `[JSONPatch{op: "replace", path: "/rules/0/verbs", value: ["get", "list"]}]`),
			}},
		{id: "rolebindings", gvr: gvr("rbac.authorization.k8s.io", "v1", "rolebindings"), kind: "RoleBinding", namespaced: true,
			object: `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: reader}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}, subjects: [{kind: ServiceAccount, name: sa, namespace: sweep}]}`,
			perts: []sweepPert{
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/roleRef/kind", value: "Thing"}]`),
			}},
		{id: "priorityclasses", gvr: gvr("scheduling.k8s.io", "v1", "priorityclasses"), kind: "PriorityClass",
			object: `{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 1000}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{description: "swept"}`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/value", value: 2000000000}]`),
			}},
		{id: "storageclasses", gvr: gvr("storage.k8s.io", "v1", "storageclasses"), kind: "StorageClass",
			object: `{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: fast}, provisioner: example.com/p, parameters: {a: b}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{reclaimPolicy: "Retain"}`),
				jp("mapentry-jp", `[JSONPatch{op: "add", path: "/parameters/c", value: "d"}]`),
				ac("atomic-ac", `Object{mountOptions: ["ro"]}`),
			}},
		{id: "csidrivers", gvr: gvr("storage.k8s.io", "v1", "csidrivers"), kind: "CSIDriver",
			object: `{apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: csi.example.com}, spec: {attachRequired: true}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{podInfoOnMount: true}}`),
				ac("atomic-ac", `Object{spec: Object.spec{volumeLifecycleModes: ["Ephemeral"]}}`),
			}},
		{id: "csinodes", gvr: gvr("storage.k8s.io", "v1", "csinodes"), kind: "CSINode",
			object: `{apiVersion: storage.k8s.io/v1, kind: CSINode, metadata: {name: node-a}, spec: {drivers: [{name: csi.example.com, nodeID: n1}]}}`,
			perts: []sweepPert{
				ac("keyed-ac", `Object{spec: Object.spec{drivers: [Object.spec.drivers{name: "csi2.example.com", nodeID: "n1"}]}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("keyed-ac", `Object{status: Object.status{storageHealth: [Object.status.storageHealth{name: "csi.example.com"}]}}`)}},
			}},
		{id: "clustertrustbundles", gvr: gvr("certificates.k8s.io", "v1", "clustertrustbundles"), kind: "ClusterTrustBundle",
			object: `{apiVersion: certificates.k8s.io/v1, kind: ClusterTrustBundle, metadata: {name: bundle}, spec: {trustBundle: ` + strconvQuote(certPEM()) + `}}`,
			perts: []sweepPert{
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/spec/trustBundle", value: "not a certificate"}]`),
			}},
		{id: "podcertificaterequests", gvr: gvr("certificates.k8s.io", "v1", "podcertificaterequests"), kind: "PodCertificateRequest", namespaced: true,
			object: podCertificateRequest(),
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{maxExpirationSeconds: 3600}}`),
				ac("mapentry-ac", `Object{spec: Object.spec{unverifiedUserAnnotations: {"example.com/a": "b"}}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "storageversionmigrations", gvr: gvr("storagemigration.k8s.io", "v1", "storageversionmigrations"), kind: "StorageVersionMigration",
			object: `{apiVersion: storagemigration.k8s.io/v1, kind: StorageVersionMigration, metadata: {name: svm}, spec: {resource: {group: apps, resource: deployments}}}`,
			perts: []sweepPert{
				jp("scalar-jp", `[JSONPatch{op: "replace", path: "/spec/resource/resource", value: "statefulsets"}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "devicetaintrules", gvr: gvr("resource.k8s.io", "v1", "devicetaintrules"), kind: "DeviceTaintRule",
			object: `{apiVersion: resource.k8s.io/v1, kind: DeviceTaintRule, metadata: {name: taint}, spec: {deviceSelector: {driver: dra.example.com}, taint: {key: example.com/broken, effect: NoSchedule}}}`,
			perts: []sweepPert{
				ac("struct-ac", `Object{spec: Object.spec{taint: Object.spec.taint{value: "yes"}}}`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/spec/taint/effect", value: "Sometimes"}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "csistoragecapacities", gvr: gvr("storage.k8s.io", "v1", "csistoragecapacities"), kind: "CSIStorageCapacity", namespaced: true,
			object: `{apiVersion: storage.k8s.io/v1, kind: CSIStorageCapacity, metadata: {name: cap}, storageClassName: fast, capacity: 1Gi}`,
			perts: []sweepPert{
				jp("scalar-jp", `[JSONPatch{op: "replace", path: "/capacity", value: "2Gi"}]`),
			}},
		{id: "volumeattachments", gvr: gvr("storage.k8s.io", "v1", "volumeattachments"), kind: "VolumeAttachment",
			object: `{apiVersion: storage.k8s.io/v1, kind: VolumeAttachment, metadata: {name: va}, spec: {attacher: csi.example.com, nodeName: n1, source: {persistentVolumeName: pv-a}}}`,
			perts: []sweepPert{
				jp("scalar-jp", `[JSONPatch{op: "replace", path: "/spec/nodeName", value: "n2"}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel, ac("scalar-ac", `Object{status: Object.status{attached: true}}`)}},
			}},
		{id: "volumeattributesclasses", gvr: gvr("storage.k8s.io", "v1", "volumeattributesclasses"), kind: "VolumeAttributesClass",
			object: `{apiVersion: storage.k8s.io/v1, kind: VolumeAttributesClass, metadata: {name: gold}, driverName: csi.example.com, parameters: {iops: "100"}}`,
			perts: []sweepPert{
				jp("mapentry-jp", `[JSONPatch{op: "add", path: "/parameters/throughput", value: "50"}]`),
			}},
		{id: "leases", gvr: gvr("coordination.k8s.io", "v1", "leases"), kind: "Lease", namespaced: true,
			object: `{apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: lock}, spec: {holderIdentity: a, leaseDurationSeconds: 10}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{holderIdentity: "b"}}`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/spec/leaseDurationSeconds", value: 0}]`),
			}},
		{id: "endpointslices", gvr: gvr("discovery.k8s.io", "v1", "endpointslices"), kind: "EndpointSlice", namespaced: true,
			object: `{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: web-abc}, addressType: IPv4, endpoints: [{addresses: [10.1.2.3]}], ports: [{name: http, port: 80, protocol: TCP}]}`,
			perts: []sweepPert{
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/endpoints/-", value: {"addresses": ["10.1.2.4"]}}]`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/addressType", value: "IPv7"}]`),
			}},
		{id: "flowschemas", gvr: gvr("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"), kind: "FlowSchema",
			object: `{apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: FlowSchema, metadata: {name: fs}, spec: {priorityLevelConfiguration: {name: global-default}, matchingPrecedence: 500}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{matchingPrecedence: 600}}`),
				jp("scalar-invalid-jp", `[JSONPatch{op: "replace", path: "/spec/matchingPrecedence", value: 20000}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "prioritylevelconfigurations", gvr: gvr("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"), kind: "PriorityLevelConfiguration",
			object: `{apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: PriorityLevelConfiguration, metadata: {name: plc}, spec: {type: Limited, limited: {nominalConcurrencyShares: 5, limitResponse: {type: Reject}}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{limited: Object.spec.limited{lendablePercent: 10}}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "certificatesigningrequests", gvr: gvr("certificates.k8s.io", "v1", "certificatesigningrequests"), kind: "CertificateSigningRequest",
			object: `{apiVersion: certificates.k8s.io/v1, kind: CertificateSigningRequest, metadata: {name: csr}, spec: {request: ` + csrPEM() + `, signerName: example.com/signer, usages: [digital signature]}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{expirationSeconds: 3600}}`),
				ac("atomic-ac", `Object{spec: Object.spec{usages: ["client auth"]}}`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
				{name: "approval", perts: []sweepPert{statusLabel, ac("keyed-ac", `Object{status: Object.status{conditions: [Object.status.conditions{type: "Approved", status: "True", reason: "Swept"}]}}`)}},
			}},
		// noUpdate: its name is fixed.
		{noUpdate: true, id: "customresourcedefinitions", gvr: gvr("apiextensions.k8s.io", "v1", "customresourcedefinitions"), kind: "CustomResourceDefinition", fixedName: true,
			object: `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: things.sweep.mutatis.dev}, spec: {group: sweep.mutatis.dev, scope: Namespaced, names: {plural: things, kind: Thing}, versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]}}`,
			perts: []sweepPert{
				ac("atomic-ac", `Object{spec: Object.spec{names: Object.spec.names{shortNames: ["th"]}}}`),
			},
			subs: []sweepSub{
				{name: "status", parentName: "others.sweep.mutatis.dev", parent: `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: others.sweep.mutatis.dev}, spec: {group: sweep.mutatis.dev, scope: Namespaced, names: {plural: others, kind: Other}, versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]}}`, perts: []sweepPert{statusLabel}},
			}},
		// noUpdate: its name is fixed.
		{noUpdate: true, id: "apiservices", gvr: gvr("apiregistration.k8s.io", "v1", "apiservices"), kind: "APIService", fixedName: true,
			object: `{apiVersion: apiregistration.k8s.io/v1, kind: APIService, metadata: {name: v1.sweep.example.com}, spec: {group: sweep.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 10, service: {namespace: sweep, name: api}}}`,
			perts: []sweepPert{
				ac("scalar-ac", `Object{spec: Object.spec{insecureSkipTLSVerify: true}}`),
			},
			subs: []sweepSub{
				{name: "status", parentName: "v1.other.example.com", parent: `{apiVersion: apiregistration.k8s.io/v1, kind: APIService, metadata: {name: v1.other.example.com}, spec: {group: other.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 10, service: {namespace: sweep, name: api}}}`, perts: []sweepPert{statusLabel}},
			}},
		{id: "mutatingwebhookconfigurations", gvr: gvr("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"), kind: "MutatingWebhookConfiguration",
			object: `{apiVersion: admissionregistration.k8s.io/v1, kind: MutatingWebhookConfiguration, metadata: {name: mwc}}`},
		{id: "validatingwebhookconfigurations", gvr: gvr("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"), kind: "ValidatingWebhookConfiguration",
			object: `{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingWebhookConfiguration, metadata: {name: vwc}}`},
		{id: "validatingadmissionpolicies", gvr: gvr("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"), kind: "ValidatingAdmissionPolicy",
			object: `{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingAdmissionPolicy, metadata: {name: vap}, spec: {matchConstraints: {resourceRules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}]}, validations: [{expression: "true"}]}}`,
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "validatingadmissionpolicybindings", gvr: gvr("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings"), kind: "ValidatingAdmissionPolicyBinding",
			object: `{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingAdmissionPolicyBinding, metadata: {name: vapb}, spec: {policyName: vap, validationActions: [Deny]}}`},
		{id: "mutatingadmissionpolicies", gvr: gvr("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies"), kind: "MutatingAdmissionPolicy",
			object: `{apiVersion: admissionregistration.k8s.io/v1, kind: MutatingAdmissionPolicy, metadata: {name: map}, spec: {matchConstraints: {resourceRules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}]}, reinvocationPolicy: Never, mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: \"test\", path: \"/metadata/name\", value: \"x\"}]"}}]}}`},
		{id: "mutatingadmissionpolicybindings", gvr: gvr("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicybindings"), kind: "MutatingAdmissionPolicyBinding",
			object: `{apiVersion: admissionregistration.k8s.io/v1, kind: MutatingAdmissionPolicyBinding, metadata: {name: mapb}, spec: {policyName: map}}`},
		{id: "deviceclasses", gvr: gvr("resource.k8s.io", "v1", "deviceclasses"), kind: "DeviceClass",
			object: `{apiVersion: resource.k8s.io/v1, kind: DeviceClass, metadata: {name: gpu}, spec: {selectors: [{cel: {expression: "true"}}]}}`,
			perts: []sweepPert{
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/spec/selectors/-", value: {"cel": {"expression": "device.driver == 'x'"}}}]`),
			}},
		{id: "resourceclaims", gvr: gvr("resource.k8s.io", "v1", "resourceclaims"), kind: "ResourceClaim", namespaced: true,
			object: `{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: claim}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}}}`,
			perts: []sweepPert{
				jp("scalar-jp", `[JSONPatch{op: "add", path: "/spec/devices/requests/0/exactly/count", value: 2}]`),
			},
			subs: []sweepSub{
				{name: "status", perts: []sweepPert{statusLabel}},
			}},
		{id: "resourceclaimtemplates", gvr: gvr("resource.k8s.io", "v1", "resourceclaimtemplates"), kind: "ResourceClaimTemplate", namespaced: true,
			object: `{apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, metadata: {name: tpl}, spec: {spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}}}}`,
			perts: []sweepPert{
				jp("scalar-jp", `[JSONPatch{op: "add", path: "/spec/spec/devices/requests/0/exactly/count", value: 2}]`),
			}},
		{id: "resourceslices", gvr: gvr("resource.k8s.io", "v1", "resourceslices"), kind: "ResourceSlice",
			object: `{apiVersion: resource.k8s.io/v1, kind: ResourceSlice, metadata: {name: slice}, spec: {driver: dra.example.com, pool: {name: p, generation: 1, resourceSliceCount: 1}, nodeName: n1, devices: [{name: d0}]}}`,
			perts: []sweepPert{
				jp("atomic-jp", `[JSONPatch{op: "add", path: "/spec/devices/-", value: {"name": "d1"}}]`),
			}},
	}
}

// csrPEM is a fresh PEM certificate request, base64 encoded for a
// CertificateSigningRequest's spec.request.
func csrPEM() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "sweep"}}, key)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// certPEM is a fresh self-signed CA certificate, PEM encoded.
func certPEM() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sweep-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// strconvQuote quotes s for a YAML flow scalar (JSON is YAML).
func strconvQuote(s string) string { return strconv.Quote(s) }

// podCertificateRequest is a PodCertificateRequest whose stub request is
// signed by its key (the proof of possession validation checks).
func podCertificateRequest() string {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		panic(err)
	}
	return `{apiVersion: certificates.k8s.io/v1, kind: PodCertificateRequest, metadata: {name: pcr}, spec: {signerName: example.com/signer, podName: web, podUID: 11111111-1111-1111-1111-111111111111, serviceAccountName: default, serviceAccountUID: 22222222-2222-2222-2222-222222222222, nodeName: node-a, nodeUID: 33333333-3333-3333-3333-333333333333, stubPKCS10Request: ` + base64.StdEncoding.EncodeToString(der) + `}}`
}

// sweepSkipped are the resources and subresources served with a write
// verb that the sweep leaves out, and why.
func sweepSkipped() map[string]string {
	const review = "a review: nothing is stored, the answer is computed (no registry strategy to compare)"
	const connect = "CONNECT, a stream to a kubelet or a proxied request: MAP does not mutate CONNECT requests"
	const action = "an action on the parent (no object of its own is stored by a strategy)"
	return map[string]string{
		"tokenreviews.authentication.k8s.io":             review,
		"selfsubjectreviews.authentication.k8s.io":       review,
		"subjectaccessreviews.authorization.k8s.io":      review,
		"selfsubjectaccessreviews.authorization.k8s.io":  review,
		"selfsubjectrulesreviews.authorization.k8s.io":   review,
		"localsubjectaccessreviews.authorization.k8s.io": review,
		"bindings":              "the create-only Binding of the core group (as pods/binding): " + action,
		"pods/binding":          action + "; docs/fidelity.md, Known gaps (no Binding schema offline)",
		"pods/eviction":         action + ": test/e2e TestEquivalentAndSubresources covers it",
		"serviceaccounts/token": action + ": a TokenRequest, answered with a token",
		"componentstatuses":     "read-only",
		"pods/attach":           connect,
		"pods/exec":             connect,
		"pods/portforward":      connect,
		"pods/proxy":            connect,
		"nodes/proxy":           connect,
		"services/proxy":        connect,
	}
}

// sweepKnown are the sweep's cases whose difference docs/fidelity.md
// explains, with the reason.
//
// A key is a case's id, or a resource's (its id, or id-subresource) for
// every case of it.
func sweepKnown() map[string]string {
	const notRun = "its registry strategy, which reads the request's Namespace through a client, does not run offline (docs/fidelity.md, What the cluster stores, Not reproduced): no generation, no validation"
	const noStatus = "its status strategy does not run offline (docs/fidelity.md, The kind sweep): a label a policy adds on the status subresource is kept"
	const aggregated = "not in kube-apiserver's legacy scheme (apiextensions-apiserver, kube-aggregator): mutatis neither defaults, validates nor merges an ApplyConfiguration with it (docs/fidelity.md, The kind sweep)"
	return map[string]string{
		"resourceclaims":                   "ResourceClaim: " + notRun + " (its immutable spec)",
		"resourceclaimtemplates":           "ResourceClaimTemplate: " + notRun + " (its immutable spec)",
		"resourceclaims-status":            "ResourceClaim: " + noStatus,
		"podcertificaterequests-status":    "PodCertificateRequest: " + noStatus + " (the strategy needs an authorizer for the signer)",
		"customresourcedefinitions":        "CustomResourceDefinition: " + aggregated,
		"customresourcedefinitions-status": "CustomResourceDefinition: " + aggregated,
		"apiservices":                      "APIService: " + aggregated,
		"apiservices-status":               "APIService: " + aggregated,
	}
}

// knownReason is the reason sweepKnown gives for sc's difference, or "".
func knownReason(known map[string]string, sc sweepCase) string {
	if r, ok := known[sc.id]; ok {
		return r
	}
	if sc.sub != nil && sc.sub.name != "" {
		return known[sc.kind.id+"-"+sc.sub.name]
	}
	return known[sc.kind.id]
}
