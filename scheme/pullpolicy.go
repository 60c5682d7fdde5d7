package scheme

import (
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	coredefaults "k8s.io/kubernetes/pkg/apis/core/v1"
)

// The image pull policy of a container as written, remembered by image
// (defaultFast of an object not yet defaulted).
//
// SetDefaults_Container gives a container without an imagePullPolicy one
// that depends on its image alone: it parses the image reference (a
// regular expression, the largest cost of the defaulters of a Pod, a
// Deployment or any workload as written) and picks Always for the tag
// "latest", IfNotPresent otherwise. The images of a cluster are few and
// repeat: pullPolicies remembers, per image, what upstream's own
// SetDefaults_Container wrote on a container holding that image alone
// (probe), and, before the defaulters run on a typed object of a workload
// kind whose generated SetObjectDefaults calls SetDefaults_Container (or
// SetDefaults_EphemeralContainer) on every container of its pod template,
// the remembered policy is written into each container without one. The
// defaulter then finds a policy and keeps it: the object is the one it
// would have made. The premise (the policy depends on the image alone, and
// every container of these kinds is defaulted) is held by
// TestPullPolicyPrefillIsTheDefaulter (containers of every kind listed,
// their other fields perturbed, against the reference defaulting) and the
// defaulting oracles over every kind.

// pullPolicies remembers, per image, the pull policy SetDefaults_Container
// gives a container of that image without one. It is safe for concurrent
// use; the zero value is empty.
type pullPolicies struct {
	m sync.Map // image string -> corev1.PullPolicy
	// n counts the entries, bounded by maxMemo (guarded by mu).
	mu sync.Mutex
	n  int
}

// of is the pull policy SetDefaults_Container gives a container of image
// image without one.
func (pp *pullPolicies) of(image string) corev1.PullPolicy {
	if v, ok := pp.m.Load(image); ok {
		return v.(corev1.PullPolicy)
	}
	policy := probePullPolicy(image)
	pp.mu.Lock()
	if pp.n < maxMemo {
		// The key cloned: image may be part of a larger request body.
		if _, loaded := pp.m.LoadOrStore(strings.Clone(image), policy); !loaded {
			pp.n++
		}
	}
	pp.mu.Unlock()
	return policy
}

// probePullPolicy is the pull policy upstream's SetDefaults_Container
// writes on a container of image image that has none.
func probePullPolicy(image string) corev1.PullPolicy {
	c := corev1.Container{Image: image}
	coredefaults.SetDefaults_Container(&c)
	return c.ImagePullPolicy
}

// prefill writes, in every container of typed's pod template (typed, an
// object of a kind listed in podSpecOf, about to be defaulted) without an
// imagePullPolicy, the one the defaulters would give it.
func (pp *pullPolicies) prefill(typed runtime.Object) {
	spec := podSpecOf(typed)
	if spec == nil {
		return
	}
	for i := range spec.Containers {
		pp.fill(&spec.Containers[i])
	}
	for i := range spec.InitContainers {
		pp.fill(&spec.InitContainers[i])
	}
	for i := range spec.EphemeralContainers {
		// SetDefaults_EphemeralContainer is SetDefaults_Container of the
		// same fields.
		pp.fill((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

// fill is prefill of one container.
func (pp *pullPolicies) fill(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pp.of(c.Image)
	}
}

// podSpecOf is the pod spec of typed when typed is of a kind whose
// generated defaulters run SetDefaults_Container over every container of
// it (the workload kinds of core/v1, apps/v1 and batch/v1), else nil.
func podSpecOf(typed runtime.Object) *corev1.PodSpec {
	switch o := typed.(type) {
	case *corev1.Pod:
		return &o.Spec
	case *corev1.PodTemplate:
		return &o.Template.Spec
	case *corev1.ReplicationController:
		if o.Spec.Template != nil {
			return &o.Spec.Template.Spec
		}
	case *appsv1.Deployment:
		return &o.Spec.Template.Spec
	case *appsv1.ReplicaSet:
		return &o.Spec.Template.Spec
	case *appsv1.StatefulSet:
		return &o.Spec.Template.Spec
	case *appsv1.DaemonSet:
		return &o.Spec.Template.Spec
	case *batchv1.Job:
		return &o.Spec.Template.Spec
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template.Spec
	}
	return nil
}
