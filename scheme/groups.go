package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	admission "k8s.io/kubernetes/pkg/apis/admission"
	admissionv1 "k8s.io/kubernetes/pkg/apis/admission/v1"
	admissionv1beta1 "k8s.io/kubernetes/pkg/apis/admission/v1beta1"
	admissionregistration "k8s.io/kubernetes/pkg/apis/admissionregistration"
	admissionregistrationv1 "k8s.io/kubernetes/pkg/apis/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/kubernetes/pkg/apis/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/kubernetes/pkg/apis/admissionregistration/v1beta1"
	apiserverinternal "k8s.io/kubernetes/pkg/apis/apiserverinternal"
	apiserverinternalv1alpha1 "k8s.io/kubernetes/pkg/apis/apiserverinternal/v1alpha1"
	apps "k8s.io/kubernetes/pkg/apis/apps"
	appsv1 "k8s.io/kubernetes/pkg/apis/apps/v1"
	appsv1beta1 "k8s.io/kubernetes/pkg/apis/apps/v1beta1"
	appsv1beta2 "k8s.io/kubernetes/pkg/apis/apps/v1beta2"
	authentication "k8s.io/kubernetes/pkg/apis/authentication"
	authenticationv1 "k8s.io/kubernetes/pkg/apis/authentication/v1"
	authenticationv1alpha1 "k8s.io/kubernetes/pkg/apis/authentication/v1alpha1"
	authenticationv1beta1 "k8s.io/kubernetes/pkg/apis/authentication/v1beta1"
	authorization "k8s.io/kubernetes/pkg/apis/authorization"
	authorizationv1 "k8s.io/kubernetes/pkg/apis/authorization/v1"
	authorizationv1beta1 "k8s.io/kubernetes/pkg/apis/authorization/v1beta1"
	autoscaling "k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingv1 "k8s.io/kubernetes/pkg/apis/autoscaling/v1"
	autoscalingv2 "k8s.io/kubernetes/pkg/apis/autoscaling/v2"
	batch "k8s.io/kubernetes/pkg/apis/batch"
	batchv1 "k8s.io/kubernetes/pkg/apis/batch/v1"
	batchv1beta1 "k8s.io/kubernetes/pkg/apis/batch/v1beta1"
	certificates "k8s.io/kubernetes/pkg/apis/certificates"
	certificatesv1 "k8s.io/kubernetes/pkg/apis/certificates/v1"
	certificatesv1alpha1 "k8s.io/kubernetes/pkg/apis/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/kubernetes/pkg/apis/certificates/v1beta1"
	coordination "k8s.io/kubernetes/pkg/apis/coordination"
	coordinationv1 "k8s.io/kubernetes/pkg/apis/coordination/v1"
	coordinationv1alpha2 "k8s.io/kubernetes/pkg/apis/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/kubernetes/pkg/apis/coordination/v1beta1"
	core "k8s.io/kubernetes/pkg/apis/core"
	corev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	discovery "k8s.io/kubernetes/pkg/apis/discovery"
	discoveryv1 "k8s.io/kubernetes/pkg/apis/discovery/v1"
	discoveryv1beta1 "k8s.io/kubernetes/pkg/apis/discovery/v1beta1"
	events "k8s.io/kubernetes/pkg/apis/events"
	eventsv1 "k8s.io/kubernetes/pkg/apis/events/v1"
	eventsv1beta1 "k8s.io/kubernetes/pkg/apis/events/v1beta1"
	extensions "k8s.io/kubernetes/pkg/apis/extensions"
	extensionsv1beta1 "k8s.io/kubernetes/pkg/apis/extensions/v1beta1"
	flowcontrol "k8s.io/kubernetes/pkg/apis/flowcontrol"
	flowcontrolv1 "k8s.io/kubernetes/pkg/apis/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/kubernetes/pkg/apis/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/kubernetes/pkg/apis/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/kubernetes/pkg/apis/flowcontrol/v1beta3"
	imagepolicy "k8s.io/kubernetes/pkg/apis/imagepolicy"
	imagepolicyv1alpha1 "k8s.io/kubernetes/pkg/apis/imagepolicy/v1alpha1"
	lifecycle "k8s.io/kubernetes/pkg/apis/lifecycle"
	lifecyclev1alpha1 "k8s.io/kubernetes/pkg/apis/lifecycle/v1alpha1"
	networking "k8s.io/kubernetes/pkg/apis/networking"
	networkinginstall "k8s.io/kubernetes/pkg/apis/networking/install"
	networkingv1 "k8s.io/kubernetes/pkg/apis/networking/v1"
	networkingv1beta1 "k8s.io/kubernetes/pkg/apis/networking/v1beta1"
	nodeapi "k8s.io/kubernetes/pkg/apis/node"
	nodev1 "k8s.io/kubernetes/pkg/apis/node/v1"
	nodev1alpha1 "k8s.io/kubernetes/pkg/apis/node/v1alpha1"
	nodev1beta1 "k8s.io/kubernetes/pkg/apis/node/v1beta1"
	policy "k8s.io/kubernetes/pkg/apis/policy"
	policyv1 "k8s.io/kubernetes/pkg/apis/policy/v1"
	policyv1beta1 "k8s.io/kubernetes/pkg/apis/policy/v1beta1"
	rbac "k8s.io/kubernetes/pkg/apis/rbac"
	rbacv1 "k8s.io/kubernetes/pkg/apis/rbac/v1"
	rbacv1alpha1 "k8s.io/kubernetes/pkg/apis/rbac/v1alpha1"
	rbacv1beta1 "k8s.io/kubernetes/pkg/apis/rbac/v1beta1"
	resourceapi "k8s.io/kubernetes/pkg/apis/resource"
	resourcev1 "k8s.io/kubernetes/pkg/apis/resource/v1"
	resourcev1alpha3 "k8s.io/kubernetes/pkg/apis/resource/v1alpha3"
	resourcev1beta1 "k8s.io/kubernetes/pkg/apis/resource/v1beta1"
	resourcev1beta2 "k8s.io/kubernetes/pkg/apis/resource/v1beta2"
	scheduling "k8s.io/kubernetes/pkg/apis/scheduling"
	schedulingv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	schedulingv1alpha3 "k8s.io/kubernetes/pkg/apis/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/kubernetes/pkg/apis/scheduling/v1beta1"
	storage "k8s.io/kubernetes/pkg/apis/storage"
	storagev1 "k8s.io/kubernetes/pkg/apis/storage/v1"
	storagev1alpha1 "k8s.io/kubernetes/pkg/apis/storage/v1alpha1"
	storagev1beta1 "k8s.io/kubernetes/pkg/apis/storage/v1beta1"
	storagemigration "k8s.io/kubernetes/pkg/apis/storagemigration"
	storagemigrationv1 "k8s.io/kubernetes/pkg/apis/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/kubernetes/pkg/apis/storagemigration/v1beta1"
)

// networking/install registers at init, as in kube-apiserver (which
// imports every install package: import_known_versions.go), and so before
// extensions/install, which mutatis' imports also initialize: the
// extensions group registers networking's internal Ingress and
// NetworkPolicy too, and the first registered kind of a type names it in
// the registry's errors (rest.BeforeCreate's ObjectKinds()[0]): a 422 says
// `Ingress.networking.k8s.io "web" is invalid`, as kube-apiserver's does
// (TestInvalidKindsNameTheirServedGroup; test/e2e case 43-*). Left to
// installers, networking would come after extensions.
var _ = networkinginstall.Install

// installers register kube-apiserver 1.37's API groups, internal and
// versioned types with their defaulters, conversions and declarative
// validations, exactly as the groups' install packages
// (k8s.io/kubernetes/pkg/apis/*/install, the set
// pkg/controlplane/import_known_versions.go imports) do. The install packages
// themselves are not imported: they register into legacyscheme.Scheme at
// init, which every run would pay for; Scheme registers on first use.
func installers() []func(*runtime.Scheme) error {
	return []func(*runtime.Scheme) error{
		// admission
		admission.AddToScheme,
		admissionv1beta1.AddToScheme,
		admissionv1.AddToScheme,
		priority(admissionv1.SchemeGroupVersion, admissionv1beta1.SchemeGroupVersion),
		// admissionregistration
		admissionregistration.AddToScheme,
		admissionregistrationv1beta1.AddToScheme,
		admissionregistrationv1alpha1.AddToScheme,
		admissionregistrationv1.AddToScheme,
		priority(admissionregistrationv1.SchemeGroupVersion, admissionregistrationv1beta1.SchemeGroupVersion, admissionregistrationv1alpha1.SchemeGroupVersion),
		// apiserverinternal
		apiserverinternal.AddToScheme,
		apiserverinternalv1alpha1.AddToScheme,
		priority(apiserverinternalv1alpha1.SchemeGroupVersion),
		// apps
		apps.AddToScheme,
		appsv1beta1.AddToScheme,
		appsv1beta2.AddToScheme,
		appsv1.AddToScheme,
		priority(appsv1.SchemeGroupVersion, appsv1beta2.SchemeGroupVersion, appsv1beta1.SchemeGroupVersion),
		// authentication
		authentication.AddToScheme,
		authenticationv1beta1.AddToScheme,
		authenticationv1alpha1.AddToScheme,
		authenticationv1.AddToScheme,
		priority(authenticationv1.SchemeGroupVersion, authenticationv1beta1.SchemeGroupVersion, authenticationv1alpha1.SchemeGroupVersion),
		// authorization
		authorization.AddToScheme,
		authorizationv1beta1.AddToScheme,
		authorizationv1.AddToScheme,
		priority(authorizationv1.SchemeGroupVersion, authorizationv1beta1.SchemeGroupVersion),
		// autoscaling
		autoscaling.AddToScheme,
		autoscalingv2.AddToScheme,
		autoscalingv1.AddToScheme,
		priority(autoscalingv2.SchemeGroupVersion, autoscalingv1.SchemeGroupVersion),
		// batch
		batch.AddToScheme,
		batchv1.AddToScheme,
		batchv1beta1.AddToScheme,
		priority(batchv1.SchemeGroupVersion, batchv1beta1.SchemeGroupVersion),
		// certificates
		certificates.AddToScheme,
		certificatesv1.AddToScheme,
		certificatesv1beta1.AddToScheme,
		certificatesv1alpha1.AddToScheme,
		priority(certificatesv1.SchemeGroupVersion, certificatesv1beta1.SchemeGroupVersion, certificatesv1alpha1.SchemeGroupVersion),
		// coordination
		coordination.AddToScheme,
		coordinationv1alpha2.AddToScheme,
		coordinationv1beta1.AddToScheme,
		coordinationv1.AddToScheme,
		priority(coordinationv1.SchemeGroupVersion, coordinationv1beta1.SchemeGroupVersion, coordinationv1alpha2.SchemeGroupVersion),
		// core
		core.AddToScheme,
		corev1.AddToScheme,
		priority(corev1.SchemeGroupVersion),
		// discovery
		discovery.AddToScheme,
		discoveryv1beta1.AddToScheme,
		discoveryv1.AddToScheme,
		priority(discoveryv1.SchemeGroupVersion, discoveryv1beta1.SchemeGroupVersion),
		// events
		events.AddToScheme,
		eventsv1beta1.AddToScheme,
		eventsv1.AddToScheme,
		priority(eventsv1.SchemeGroupVersion, eventsv1beta1.SchemeGroupVersion),
		// extensions
		extensions.AddToScheme,
		extensionsv1beta1.AddToScheme,
		priority(extensionsv1beta1.SchemeGroupVersion),
		// flowcontrol
		flowcontrol.AddToScheme,
		flowcontrolv1beta1.AddToScheme,
		flowcontrolv1beta2.AddToScheme,
		flowcontrolv1beta3.AddToScheme,
		flowcontrolv1.AddToScheme,
		priority(flowcontrolv1.SchemeGroupVersion, flowcontrolv1beta3.SchemeGroupVersion, flowcontrolv1beta2.SchemeGroupVersion, flowcontrolv1beta1.SchemeGroupVersion),
		// imagepolicy
		imagepolicy.AddToScheme,
		imagepolicyv1alpha1.AddToScheme,
		priority(imagepolicyv1alpha1.SchemeGroupVersion),
		// lifecycle
		lifecycle.AddToScheme,
		lifecyclev1alpha1.AddToScheme,
		priority(lifecyclev1alpha1.SchemeGroupVersion),
		// networking
		networking.AddToScheme,
		networkingv1.AddToScheme,
		networkingv1beta1.AddToScheme,
		priority(networkingv1.SchemeGroupVersion, networkingv1beta1.SchemeGroupVersion),
		// node
		nodeapi.AddToScheme,
		nodev1alpha1.AddToScheme,
		nodev1beta1.AddToScheme,
		nodev1.AddToScheme,
		priority(nodev1.SchemeGroupVersion, nodev1beta1.SchemeGroupVersion),
		// policy
		policy.AddToScheme,
		policyv1beta1.AddToScheme,
		policyv1.AddToScheme,
		priority(policyv1.SchemeGroupVersion, policyv1beta1.SchemeGroupVersion),
		// rbac
		rbac.AddToScheme,
		rbacv1.AddToScheme,
		rbacv1beta1.AddToScheme,
		rbacv1alpha1.AddToScheme,
		priority(rbacv1.SchemeGroupVersion, rbacv1beta1.SchemeGroupVersion, rbacv1alpha1.SchemeGroupVersion),
		// resource
		resourceapi.AddToScheme,
		resourcev1alpha3.AddToScheme,
		resourcev1beta1.AddToScheme,
		resourcev1beta2.AddToScheme,
		resourcev1.AddToScheme,
		priority(resourcev1.SchemeGroupVersion, resourcev1beta2.SchemeGroupVersion, resourcev1beta1.SchemeGroupVersion, resourcev1alpha3.SchemeGroupVersion),
		// scheduling
		scheduling.AddToScheme,
		schedulingv1.AddToScheme,
		schedulingv1beta1.AddToScheme,
		schedulingv1alpha3.AddToScheme,
		priority(schedulingv1.SchemeGroupVersion, schedulingv1beta1.SchemeGroupVersion, schedulingv1alpha3.SchemeGroupVersion),
		// storage
		storage.AddToScheme,
		storagev1.AddToScheme,
		storagev1beta1.AddToScheme,
		storagev1alpha1.AddToScheme,
		priority(storagev1.SchemeGroupVersion, storagev1beta1.SchemeGroupVersion, storagev1alpha1.SchemeGroupVersion),
		// storagemigration
		storagemigration.AddToScheme,
		storagemigrationv1beta1.AddToScheme,
		storagemigrationv1.AddToScheme,
		priority(storagemigrationv1.SchemeGroupVersion, storagemigrationv1beta1.SchemeGroupVersion),
	}
}

// priority is SetVersionPriority as an installer.
func priority(versions ...schema.GroupVersion) func(*runtime.Scheme) error {
	return func(s *runtime.Scheme) error { return s.SetVersionPriority(versions...) }
}
