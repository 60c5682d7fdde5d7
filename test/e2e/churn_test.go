//go:build linux

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The churn scenario: one policy (ConfigMap params) and one binding are
// updated, switched, deleted and recreated, and their params updated,
// while workers keep sending AdmissionReviews straight to mutatis and
// creating ConfigMaps through kube-apiserver.
//
// Every state of the world has one expected result: the labels the policy
// sets (policy revision P, the binding's param B, that param's value V), or
// none when the policy or binding is absent. A change is acknowledged when
// mutatis shows it: for policies and bindings /statusz lists the written
// resourceVersions (or no longer lists a deleted object); params have no
// marker (they are read from an informer at evaluation time, as
// kube-apiserver reads them), so a param change is acknowledged by the
// first review that sees it. The property checked on every review sent to
// mutatis: its result is the expected result of the state acknowledged
// when the review was sent, or of a later one — no stale result after
// readiness reports the change. Creates through kube-apiserver must
// succeed and end in some state's result (kube-apiserver's own webhook
// configuration informer may lag).

const (
	churnNS     = "e2e-churn"
	churnParams = 4
	churnRounds = 3
	churnLabel  = "churn.e2e.mutatis.dev/"
)

// churnState is the world after a step.
type churnState struct {
	policy  bool
	p       int // the policy's revision
	binding bool
	b       int              // the param the binding refers to
	params  [churnParams]int // each param's value
}

// labels is what the state makes mutatis add to a subject ConfigMap.
func (s churnState) labels() map[string]string {
	if !s.policy || !s.binding {
		return map[string]string{}
	}
	return map[string]string{
		churnLabel + "policy": strconv.Itoa(s.p),
		churnLabel + "param":  strconv.Itoa(s.b),
		churnLabel + "value":  strconv.Itoa(s.params[s.b]),
	}
}

func churnPolicy(p int) *unstructured.Unstructured {
	return mustObject(fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: e2e-churn}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{labels: {
          "%[1]spolicy": "%[2]d",
          "%[1]sparam": string(params.data.param),
          "%[1]svalue": string(params.data.value)}}}
`, churnLabel, p))
}

func churnBinding(b int) *unstructured.Unstructured {
	return mustObject(fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: e2e-churn}
spec:
  policyName: e2e-churn
  paramRef: {name: churn-param-%d, namespace: %s, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: %s}
    objectSelector:
      matchLabels: {%ssubject: "true"}
`, b, churnNS, churnNS, churnLabel))
}

func churnParam(b, value int) *unstructured.Unstructured {
	return mustObject(fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: churn-param-%d, namespace: %s}, data: {param: "%d", value: "%d"}}`, b, churnNS, b, value))
}

func churnSubject(name string) *unstructured.Unstructured {
	return mustObject(fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: %q, namespace: %s, labels: {%ssubject: "true"}}, data: {k: v}}`, name, churnNS, churnLabel))
}

// churnLog is the sequence of states and the index of the last one
// acknowledged.
type churnLog struct {
	mu     sync.Mutex
	states []churnState
	acked  atomic.Int64
}

func (l *churnLog) last() churnState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.states[len(l.states)-1]
}

// push records the state a change is about to make and returns its index.
func (l *churnLog) push(s churnState) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states = append(l.states, s)
	return len(l.states) - 1
}

// labelsOf returns the labels of state i.
func (l *churnLog) labelsOf(i int) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.states[i].labels()
}

// matches returns the index of the first state at or after from whose
// labels are got, or -1.
func (l *churnLog) matches(from int, got map[string]string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; i < len(l.states); i++ {
		if maps.Equal(l.states[i].labels(), got) {
			return i
		}
	}
	return -1
}

// churnLabels returns the churn labels of a ConfigMap.
func churnLabels(u map[string]any) map[string]string {
	out := map[string]string{}
	labels, _, _ := unstructured.NestedStringMap(u, "metadata", "labels")
	for k, v := range labels {
		if k != churnLabel+"subject" && len(k) > len(churnLabel) && k[:len(churnLabel)] == churnLabel {
			out[k] = v
		}
	}
	return out
}

// sendChurnReview reviews a subject ConfigMap and returns the churn labels
// of the result.
func sendChurnReview(ctx context.Context, s *served, name string) (map[string]string, error) {
	got, resp, err := s.admit(ctx, churnSubject(name), "configmaps")
	if err != nil {
		return nil, err
	}
	if !resp.Allowed {
		return nil, fmt.Errorf("denied: %+v", resp.Result)
	}
	return churnLabels(got.Object), nil
}

// TestChurn: see churnState. Runs `mutatis serve --source native` (the MAP
// objects of a kube-apiserver whose plugin is disabled).
func TestChurn(t *testing.T) {
	bin := buildServe(t)
	c := StartCluster(t, NoMAP)
	s := startServe(t, bin, c, "--source", "native", "--native-plugin-disabled")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	createNamespace(t, ctx, c, churnNS)
	var log churnLog
	st := churnState{policy: true, p: 1, binding: true}
	for b := range churnParams {
		if _, err := c.Create(ctx, churnParam(b, 0), false); err != nil {
			t.Fatal(err)
		}
	}
	policyRV, bindingRV := "", ""
	write := func(u *unstructured.Unstructured) string {
		t.Helper()
		got, err := c.ApplyObject(ctx, u)
		if err != nil {
			t.Fatalf("writing %s: %v", kindKey(u), err)
		}
		return got.GetResourceVersion()
	}
	remove := func(u *unstructured.Unstructured) {
		t.Helper()
		if err := c.Delete(ctx, u); err != nil {
			t.Fatalf("deleting %s: %v", kindKey(u), err)
		}
	}
	// ackStatus waits until /statusz shows the policy and binding as
	// written (absent when deleted) and acknowledges state i.
	ackStatus := func(i int) {
		t.Helper()
		pols, binds := map[string]string{}, map[string]string{}
		if policyRV != "" {
			pols["e2e-churn"] = policyRV
		}
		if bindingRV != "" {
			binds["e2e-churn"] = bindingRV
		}
		if _, err := s.waitStatus(ctx, pols, binds); err != nil {
			t.Fatalf("state %d: %v", i, err)
		}
		log.acked.Store(int64(i))
	}
	// ackProbe reviews until the result is state i's and acknowledges it.
	probes := 0
	ackProbe := func(i int) {
		t.Helper()
		want := log.last().labels()
		var last string
		pctx, pcancel := context.WithTimeout(ctx, time.Minute)
		defer pcancel()
		err := poll(pctx, 20*time.Millisecond, func(ctx context.Context) (bool, error) {
			probes++
			got, err := sendChurnReview(ctx, s, fmt.Sprintf("probe-%d", probes))
			last = fmt.Sprintf("%v %v", got, err)
			return err == nil && maps.Equal(got, want), nil
		})
		if err != nil {
			t.Fatalf("state %d: mutatis does not give %v: %v (last: %s)", i, want, err, last)
		}
		log.acked.Store(int64(i))
	}

	// The initial state: params, policy and binding, and the param
	// informer synced.
	i := log.push(st)
	policyRV, bindingRV = write(churnPolicy(st.p)), write(churnBinding(st.b))
	ackStatus(i)
	ackProbe(i)

	// Workers.
	var (
		wg                       sync.WaitGroup
		direct, throughAPI, errs atomic.Int64
		stop                     = make(chan struct{})
		failures                 = make(chan string, 100)
	)
	fail := func(format string, args ...any) {
		errs.Add(1)
		select {
		case failures <- fmt.Sprintf(format, args...):
		default:
		}
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				acked := int(log.acked.Load())
				got, err := sendChurnReview(ctx, s, fmt.Sprintf("direct-%d-%d", w, n))
				direct.Add(1)
				if err != nil {
					fail("review: %v", err)
					continue
				}
				if log.matches(acked, got) < 0 {
					fail("stale result %v: state %d (%v) was acknowledged when the review was sent", got, acked, log.labelsOf(acked))
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			cctx, ccancel := quickCtx(ctx)
			got, err := c.Create(cctx, churnSubject(fmt.Sprintf("created-%d", n)), false)
			ccancel()
			throughAPI.Add(1)
			if err != nil {
				fail("create through kube-apiserver: %v", err)
				continue
			}
			if log.matches(0, churnLabels(got.Object)) < 0 {
				fail("create through kube-apiserver stored labels %v of no state", churnLabels(got.Object))
			}
		}
	}()

	// The changes: each updates st, records it, writes it and waits for
	// its acknowledgement.
	step := func(change func(*churnState), write func(), ack func(int)) {
		t.Helper()
		change(&st)
		i := log.push(st)
		write()
		ack(i)
	}
	writePolicy := func() { policyRV = write(churnPolicy(st.p)) }
	writeBinding := func() { bindingRV = write(churnBinding(st.b)) }
	for range churnRounds {
		// A new policy revision; a new value of the current param; the
		// binding refers to the next param.
		step(func(s *churnState) { s.p++ }, writePolicy, ackStatus)
		step(func(s *churnState) { s.params[s.b]++ }, func() { write(churnParam(st.b, st.params[st.b])) }, ackProbe)
		step(func(s *churnState) { s.b = (s.b + 1) % churnParams }, writeBinding, ackStatus)
		// The binding goes and comes back.
		step(func(s *churnState) { s.binding = false }, func() { remove(churnBinding(st.b)); bindingRV = "" }, ackStatus)
		step(func(s *churnState) { s.binding = true }, writeBinding, ackStatus)
		// The policy goes and comes back with a new revision.
		step(func(s *churnState) { s.policy = false }, func() { remove(churnPolicy(st.p)); policyRV = "" }, ackStatus)
		step(func(s *churnState) { s.policy, s.p = true, s.p+1 }, writePolicy, ackStatus)
		// Let requests flow in the settled state.
		time.Sleep(500 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	t.Logf("churn: %d states, %d reviews sent to mutatis, %d creates through kube-apiserver, %d probes, %d failures",
		len(log.states), direct.Load(), throughAPI.Load(), probes, errs.Load())
	if direct.Load() < int64(len(log.states)) || throughAPI.Load() == 0 {
		t.Errorf("too few requests flowed during the churn: %d reviews, %d creates", direct.Load(), throughAPI.Load())
	}
}
