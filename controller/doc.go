// Package controller keeps a source.Engine current with the
// MutatingAdmissionPolicies and bindings of a live cluster, and keeps the
// MutatingWebhookConfigurations through which kube-apiserver calls mutatis
// in step with them.
//
// # Source modes
//
// SourceNative reads admissionregistration.k8s.io policies and bindings in
// the newest version the cluster serves (v1, v1beta1 or v1alpha1, found by
// discovery). A cluster that serves that API normally runs kube-apiserver's
// own MutatingAdmissionPolicy admission plugin, which already applies those
// policies: mutatis applying them again from a webhook would mutate every
// matching object twice. New therefore refuses native mode unless
// Config.AcknowledgeBuiltinPluginDisabled says the plugin is off
// (--disable-admission-plugins=MutatingAdmissionPolicy).
//
// SourceShadow reads the same schemas from the mutatis.dev group
// (MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding served by the
// CustomResourceDefinitions in deploy/), for clusters that do not serve MAP
// or keep their plugin on. Shadow objects have not been through
// kube-apiserver's API validation, so the controller runs it (package
// manifest): an invalid object is left out and reported.
//
// Both modes read objects through dynamic informers and convert them with
// package manifest (version conversion, API defaulting, validation), so one
// code path serves every version and both groups.
//
// # What else is watched
//
//   - Namespaces (a typed informer) back the namespaceSelector and
//     namespaceObject; a cache miss falls back to a live GET.
//   - CustomResourceDefinitions (the apiextensions informer) feed
//     applyconfig.Schemas and matching.Table. The schemas are built from
//     each CRD's openAPIV3Schema with apiextensions-apiserver's own OpenAPI
//     builder, which is exactly what the cluster publishes for that CRD under
//     /openapi/v3, without polling /openapi/v3 and with one event per change.
//     Built-in kinds use the schemas compiled into client-go (Kubernetes
//     1.37).
//   - Param objects: one dynamic informer per paramKind that a bound policy
//     uses, started when the first policy needs it and stopped when none
//     does. A lookup for a kind without a synced informer goes to the API
//     server, so params are never stale (unlike kube-apiserver, see
//     kubernetes issues 133827 and 130887).
//
// # Reconciliation
//
// Every change enqueues one key; a single worker rebuilds the policy set
// from the informer caches. Conversions are cached per object revision and
// compilations by the compiler (UID and resourceVersion; deleted policies
// are forgotten), so a rebuild only recompiles what changed. A policy that
// does not convert or validate is left out and reported; in shadow mode that
// includes kube-apiserver's create-time compilation of its expressions
// (compiler.Validate: natively the policy would be refused with a 422 and
// never exist). A policy whose CEL does not compile at admission time
// (compiler.Compile) stays in (kube-apiserver reports such errors when the
// policy is invoked, under its failure policy) and is reported. Reports are
// Kubernetes Events on the object and, in shadow mode, a Ready condition in
// the object's status. The new policy set is swapped into the Engine
// atomically (source.Engine.Swap: only its candidate indexes are built; the
// Engine's matcher, params, schemas and scheme, built once when the
// controller is created, stay) and the generation counter moves on. Each cluster write of a
// sync (the webhook configurations, a Ready condition) is bounded by
// Config.WriteTimeout: an API server that does not answer makes the sync
// fail and be retried, and never keeps later policy sets out of the Engine.
//
// # Replicas and leader election
//
// Every replica runs the informers, keeps its Engine current and serves:
// kube-apiserver may call any of them. The writes to the cluster (the
// webhook configurations, the Ready conditions, the Events) are made by one
// replica only when Config.LeaderElection is enabled: the holder of a
// coordination.k8s.io/v1 Lease in Config.Namespace (k8s.io/client-go's
// leaderelection, kube-controller-manager's timings). A follower compiles
// and swaps every policy set and publishes its Status like the leader, and
// skips the writes. A replica that acquires the Lease syncs at once, so the
// cluster catches up with changes made while no one led; one that loses it
// stops writing (the writes use the leader's context) and keeps serving and
// campaigning. Status.Leader tells which one a replica is. When
// Config.Namespace does not exist (out of the cluster), no Lease can be made
// there: the controller writes without an election and logs it.
package controller
